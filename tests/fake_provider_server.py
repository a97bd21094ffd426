"""A local HTTP server that speaks enough of the OpenAI and Gemini REST APIs for the real SDKs.

Tests script it reply by reply (success bodies, errors with headers, slow answers, broken JSON) and
read back every request it received, so they can check what the SDK sent and that it sent it once.
Routes, as the SDKs call them: ``POST /v1/chat/completions``, ``POST /v1/embeddings``,
``POST /{version}/models/{model}:generateContent`` and ``…:batchEmbedContents``.
Unscripted embedding requests get deterministic vectors; unscripted generation requests get a 500.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

import numpy as np


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded, unless bytes (sent as they are)
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering: a server slower than the client's timeout
    content_type: str = "application/json"  # of a bytes body


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None


Responder = Callable[[Received], Reply]


# ---------------------------------------------------------------- reply builders


def openai_chat(
    content: str | None,
    *,
    model: str = "gpt-test-2025",
    prompt_tokens: int = 11,
    completion_tokens: int = 7,
    finish_reason: str = "stop",
    refusal: str | None = None,
) -> Reply:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    return Reply(
        body={
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def gemini_content(
    text: str | None,
    *,
    model_version: str = "gemini-test-001",
    prompt_tokens: int = 13,
    output_tokens: int = 5,
    thoughts_tokens: int | None = None,
    finish_reason: str = "STOP",
) -> Reply:
    parts = [{"text": text}] if text is not None else []
    usage = {
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt_tokens + output_tokens + (thoughts_tokens or 0),
    }
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    candidate = {"content": {"role": "model", "parts": parts}, "finishReason": finish_reason}
    return Reply(
        body={"candidates": [candidate], "usageMetadata": usage, "modelVersion": model_version}
    )


def openai_error(
    status: int,
    message: str = "failed",
    headers: Mapping[str, str] | None = None,
    code: str | None = None,
) -> Reply:
    body = {"error": {"message": message, "type": "test_error", "param": None, "code": code}}
    return Reply(status=status, body=body, headers=headers or {})


_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def google_error(
    status: int,
    message: str = "failed",
    *,
    details: list[Any] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Reply:
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _GOOGLE_STATUS.get(status, "UNKNOWN"),
    }
    if details is not None:
        error["details"] = details
    return Reply(status=status, body={"error": error}, headers=headers or {})


def fake_vector(text: str, dimension: int) -> list[float]:
    """Deterministic, deliberately not unit-norm, so that tests can see the client normalise."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    values = np.random.default_rng(seed).uniform(0.5, 3.0, dimension).astype(np.float32)
    return [float(v) for v in values]


_OPENAI_WIDTHS = {"text-embedding-3-large": 3072}


def openai_embeddings(request: Received) -> Reply:
    """What /v1/embeddings answers; base64 little-endian float32 when the SDK asks for it."""
    texts = request.body["input"]
    texts = [texts] if isinstance(texts, str) else texts
    model = request.body["model"]
    width = request.body.get("dimensions") or _OPENAI_WIDTHS.get(model, 1536)
    data = []
    for index, text in enumerate(texts):
        vector: Any = fake_vector(text, width)
        if request.body.get("encoding_format") == "base64":
            vector = base64.b64encode(np.asarray(vector, "<f4").tobytes()).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
    return Reply(body={"object": "list", "data": data, "model": model, "usage": usage})


def gemini_embeddings(request: Received) -> Reply:
    """What :batchEmbedContents answers: one ``values`` list per request, in order."""
    embeddings = []
    for item in request.body["requests"]:
        text = "".join(part.get("text", "") for part in item["content"]["parts"])
        embeddings.append({"values": fake_vector(text, item.get("outputDimensionality") or 3072)})
    return Reply(body={"embeddings": embeddings})


def as_stream(completion: dict[str, Any], piece: int = 16) -> bytes:
    """A chat.completion body as the server-sent events of the same answer streamed: the content
    in pieces of ``piece`` characters, the finish reason, then a usage-only chunk and [DONE]."""
    [choice] = completion["choices"]
    message = choice["message"]
    content = message.get("content") or ""
    head = {k: completion[k] for k in ("id", "created", "model")} | {
        "object": "chat.completion.chunk"
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return head | {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events = [chunk({"role": "assistant", "content": ""})]
    if message.get("refusal"):
        events.append(chunk({"refusal": message["refusal"]}))
    events += [chunk({"content": content[i : i + piece]}) for i in range(0, len(content), piece)]
    events.append(chunk({}, choice["finish_reason"]))
    events.append(head | {"choices": [], "usage": completion.get("usage")})
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def _default_reply(request: Received) -> Reply:
    if request.path.endswith("/v1/embeddings"):
        return openai_embeddings(request)
    if request.path.endswith(":batchEmbedContents"):
        return gemini_embeddings(request)
    return openai_error(500, f"no reply scripted for {request.path}")


# ---------------------------------------------------------------- the server


class FakeProviderServer:
    """``with FakeProviderServer() as server:`` serves on 127.0.0.1 at a free port. Each answer
    closes its connection, unless ``keep_alive_seconds`` is given: then connections are kept
    (HTTP/1.1) and closed once idle that long, as llama.cpp's server and uvicorn close them."""

    def __init__(self, keep_alive_seconds: float | None = None) -> None:
        self._keep_alive = keep_alive_seconds
        self.connections: list[int] = []  # each request's connection (the client's port)
        self._lock = threading.Condition()
        self._script: deque[Reply | Responder] = deque()
        self._received: list[Received] = []
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits for it, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    def script(self, *replies: Reply | Responder) -> None:
        """Queue the next replies, one per request; afterwards the defaults apply again."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[Received]:
        with self._lock:
            return list(self._received)

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[Received]:
        """The received requests once there are at least ``count`` (a client may give up on a slow
        reply before the server thread has logged it)."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._received) >= count, timeout):
                raise AssertionError(f"expected {count} requests, got {len(self._received)}")
            return list(self._received)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()  # releases slow replies at once
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _answer(self, request: Received) -> Reply:
        with self._lock:
            self._received.append(request)
            self._lock.notify_all()
            scripted = self._script.popleft() if self._script else None
        if scripted is None:
            return _default_reply(request)
        return scripted if isinstance(scripted, Reply) else scripted(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {name.lower(): value for name, value in self.headers.items()}
                server.connections.append(self.client_address[1])  # the client's port
                reply = server._answer(Received("POST", self.path, headers, body))
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                payload = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                content_type = reply.content_type
                streamed = isinstance(body, dict) and body.get("stream") is True
                if streamed and isinstance(reply.body, dict) and "choices" in reply.body:
                    # A scripted completion, sent as the client asked: streamed.
                    payload, content_type = as_stream(reply.body), "text/event-stream"
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", content_type)
                    self.send_header("content-length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): nothing left to tell it

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: pytest shows failures, not every request."""

        if self._keep_alive is not None:
            Handler.protocol_version = "HTTP/1.1"
            Handler.timeout = self._keep_alive  # an idle connection's read times out: closed
        return Handler
