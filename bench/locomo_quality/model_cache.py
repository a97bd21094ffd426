"""A recording proxy in front of an OpenAI-compatible model server, for formation runs on a slow model.

The workers form memories through HTTP like any deployment; a run on a 1.5B model on two cores
takes hours. Put this proxy between them and the server and every completed answer is kept on disk
under the sha256 of its request body: a re-run of the same conversation (temperature 0, the same
prompts) replays the answers already paid for and only asks the model for what changed, so an
interrupted run resumes instead of starting over.

Streamed answers are passed through chunk by chunk (the provider cuts a stream that repeats
itself; a cut closes the connection here too, which stops the model) and kept only when the model
finished them; a cut answer is kept apart, under ``cut/``, with its request, to be read (was it
really a loop?) and never replayed. Requests go to the model one at a time, as a one-slot
llama.cpp server serves them anyway; a waiting request waits here rather than in the server's
queue, and one whose client has gone meanwhile is dropped.

With no upstream the proxy only replays (tests: a recorded real model, offline): a request it has
no answer for gets a 502 problem naming its key, and is counted in ``store.missing``.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import select
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.locomo_quality.judge import JsonFiles


class AnswerStore(JsonFiles):
    """One file per answered request, under the sha256 of its body."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.hits = 0
        self.misses = 0  # asked of the model
        self.missing: list[str] = []  # replay only: requests with no recorded answer
        self.cut: list[str] = []  # answers the client stopped reading before the model finished
        self.abandoned = 0  # requests whose client had gone before the model was free
        self._cut_files = JsonFiles(root / "cut")

    @staticmethod
    def key(body: bytes) -> str:
        try:  # the same request whatever the client's key order or spacing
            canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
            return hashlib.sha256(canonical.encode()).hexdigest()
        except ValueError:
            return hashlib.sha256(body).hexdigest()

    def get(self, key: str) -> tuple[str, bytes] | None:
        saved = self._load(key)
        if saved is None:
            return None
        if "stream" in saved:
            return "text/event-stream", _replayed_stream(saved["stream"])
        return str(saved["content_type"]), json.dumps(saved["body"]).encode()

    def put(self, key: str, content_type: str, body: bytes) -> None:
        """Kept readable: a streamed answer as its text, finish reason and usage (replayed as
        one chunk), a JSON answer as its JSON."""
        text = body.decode("utf-8", "replace")
        saved: dict[str, Any] = (
            {"stream": _assembled(text)}
            if content_type.startswith("text/event-stream")
            else {"content_type": content_type, "body": json.loads(text)}
        )
        self._save(key, saved, indent=1)

    def keep_cut(self, key: str, content_type: str, body: bytes, request: bytes) -> None:
        """What the model had written when the client cut it, beside the request that asked."""
        text = body.decode("utf-8", "replace")
        if content_type.startswith("text/event-stream"):
            answer: Any = _assembled(text[: text.rfind("\n\n") + 1])  # whole events only
        else:
            answer = text
        self._cut_files._save(key, {"request": json.loads(request), "answer": answer}, indent=1)
        self.cut.append(key)


def _assembled(sse: str) -> dict[str, Any]:
    """An OpenAI chat-completion stream as one answer: content, finish_reason, usage, model."""
    content, finish, usage, model = [], None, None, None
    for line in sse.splitlines():
        if not line.startswith("data: ") or line.strip() == "data: [DONE]":
            continue
        chunk = json.loads(line[len("data: ") :])
        model = chunk.get("model", model)
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices") or []:
            content.append((choice.get("delta") or {}).get("content") or "")
            finish = choice.get("finish_reason") or finish
    return {"content": "".join(content), "finish_reason": finish, "usage": usage, "model": model}


def _replayed_stream(answer: dict[str, Any]) -> bytes:
    base = {"id": "chatcmpl-replayed", "object": "chat.completion.chunk", "created": 0}
    base["model"] = answer.get("model") or "-"
    chunks = [
        base | {"choices": [{"index": 0, "delta": {"role": "assistant", "content": answer["content"]}, "finish_reason": None}]},
        base | {"choices": [{"index": 0, "delta": {}, "finish_reason": answer["finish_reason"]}]},
    ]  # fmt: skip
    if answer.get("usage"):
        chunks.append(base | {"choices": [], "usage": answer["usage"]})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def client_gone(sock: socket.socket) -> bool:
    """Whether the client closed its connection: it has sent its whole request, so the socket is
    readable only at its end (or on a reset)."""
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _handler(upstream: str | None, store: AnswerStore, one_at_a_time: threading.Lock) -> type:
    target = urlsplit(upstream or "http://127.0.0.1")
    base_path = target.path.rstrip("/")
    host, port = target.hostname or "127.0.0.1", target.port or 80

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the body ends when the connection closes: no chunking

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _forward(self, method: str, body: bytes | None) -> None:
            key = store.key(body) if body is not None else None
            if key is not None and (saved := store.get(key)) is not None:
                store.hits += 1
                self._reply(200, saved[0], saved[1])
                return
            if upstream is None:
                store.missing.append(key or self.path)
                problem = {"error": {"message": f"no recorded answer for request {key}"}}
                self._reply(502, "application/json", json.dumps(problem).encode())
                return
            path = self.path
            if path.startswith("/v1"):
                path = path[len("/v1") :]
            with one_at_a_time:
                if client_gone(self.connection):
                    # It timed out waiting for the model (the worker's attempt has failed and its
                    # retry is queued too): asking now would cost an answer nobody reads.
                    store.abandoned += 1
                    return
                store.misses += 1
                conn = http.client.HTTPConnection(host, port, timeout=3600)
                try:
                    headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
                    conn.request(method, base_path + path, body=body, headers=headers)
                    resp = conn.getresponse()
                    content_type = resp.getheader("Content-Type", "application/json")
                    self.send_response(resp.status)
                    self.send_header("Content-Type", content_type)
                    self.end_headers()
                    kept = bytearray()
                    while chunk := resp.read1(65536):
                        kept += chunk
                        try:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                        except (BrokenPipeError, ConnectionResetError):
                            # The client cut the answer: not finished, never replayed.
                            if key is not None and resp.status == 200 and body is not None:
                                store.keep_cut(key, content_type, bytes(kept), body)
                            return
                    if key is not None and resp.status == 200 and method == "POST":
                        store.put(key, content_type, bytes(kept))
                finally:
                    conn.close()

        def _reply(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self._forward("POST", self.rfile.read(length))

        def do_GET(self) -> None:
            self._forward("GET", None)

    return Proxy


class RecordingProxy:
    """``with RecordingProxy(upstream, root) as proxy:`` → ``proxy.base_url`` (…/v1); ``upstream``
    None: replay only."""

    def __init__(self, upstream: str | None, root: Path) -> None:
        self.store = AnswerStore(root)
        handler = _handler(upstream, self.store, threading.Lock())
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
