"""A recording proxy in front of an OpenAI-compatible model server, for formation runs on a slow model.

The workers form memories through HTTP like any deployment; a run on a 1.5B model on two cores
takes hours. Put this proxy between them and the server and every completed answer is kept on disk
under the sha256 of its request body: a re-run of the same conversation (temperature 0, the same
prompts) replays the answers already paid for and only asks the model for what changed, so an
interrupted run resumes instead of starting over.

Streamed answers are passed through chunk by chunk (the provider cuts a stream that repeats
itself; a cut closes the connection here too, which stops the model) and kept only when the model
finished them. Requests go to the model one at a time, as a one-slot llama.cpp server serves them
anyway; a waiting request waits here rather than in the server's queue.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class AnswerStore:
    """One file per answered request: ``root/ab/abcdef….json`` (status, type, body), atomic."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(body: bytes) -> str:
        try:  # the same request whatever the client's key order or spacing
            canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":"))
            return hashlib.sha256(canonical.encode()).hexdigest()
        except ValueError:
            return hashlib.sha256(body).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> tuple[str, bytes] | None:
        path = self._path(key)
        if not path.exists():
            return None
        saved = json.loads(path.read_text(encoding="utf-8"))
        return str(saved["content_type"]), str(saved["body"]).encode()

    def put(self, key: str, content_type: str, body: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(".tmp")
        saved = {"content_type": content_type, "body": body.decode("utf-8", "replace")}
        tmp.write_text(json.dumps(saved), encoding="utf-8")
        tmp.replace(path)


def _handler(upstream: str, store: AnswerStore, one_at_a_time: threading.Lock) -> type:
    target = urlsplit(upstream)
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
            path = self.path
            if path.startswith("/v1"):
                path = path[len("/v1") :]
            with one_at_a_time:
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
                            return  # the client cut the answer: not finished, not kept
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
    """``with RecordingProxy(upstream, root) as proxy:`` → ``proxy.base_url`` (…/v1)."""

    def __init__(self, upstream: str, root: Path) -> None:
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
