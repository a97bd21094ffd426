"""bench/locomo_quality/model_cache.py: the recording proxy a real-model quality run goes through.

A finished answer is kept and replayed; an answer the client cut (the provider stops reading a
stream that repeats itself) is kept apart, with its request, and never replayed: a re-run asks the
model again, and the cut text can be read to see whether it really looped.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from bench.locomo_quality.model_cache import RecordingProxy, client_gone

REQUEST = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "facts?"}]}
# Far more than the sockets between here and the proxy can buffer: the upstream cannot finish
# before the proxy, writing to the gone client, fails and hangs up on it.
MORE_CHUNKS = 200_000


def _event(content: str, finish: str | None = None) -> bytes:
    chunk = {"model": "m", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]}  # fmt: skip
    return f"data: {json.dumps(chunk)}\n\n".encode()


class _Upstream:
    """A model server that streams a first chunk, then (``cut``) waits until the client has gone
    and keeps streaming until its own writes fail, which happens only after the proxy has closed
    the connection, i.e. after it dealt with the cut."""

    def __init__(self, *, cut: bool) -> None:
        self.client_gone = threading.Event()
        self.done = threading.Event()
        self.asked = 0
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                upstream.asked += 1
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    self.wfile.write(_event('{"facts": [{"content": "Ann likes tea"'))
                    self.wfile.flush()
                    if not cut:
                        self.wfile.write(_event("}]}", "stop") + b"data: [DONE]\n\n")
                        return
                    upstream.client_gone.wait(30)
                    for _ in range(MORE_CHUNKS):
                        self.wfile.write(_event(', "Ann likes tea"'))
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    upstream.done.set()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cutting() -> Iterator[_Upstream]:
    upstream = _Upstream(cut=True)
    yield upstream
    upstream.close()


def _post(base_url: str) -> http.client.HTTPResponse:
    url = urlsplit(base_url)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=30)
    conn.request("POST", f"{url.path}/chat/completions", body=json.dumps(REQUEST))
    return conn.getresponse()


def test_a_cut_answer_is_kept_apart_with_its_request_and_not_replayed(
    tmp_path: Path, cutting: _Upstream
) -> None:
    with RecordingProxy(cutting.url, tmp_path) as proxy:
        response = _post(proxy.base_url)
        first = response.read1(65536)
        assert b"Ann likes tea" in first
        response.close()  # the provider stops reading, as it does on a loop
        cutting.client_gone.set()
        assert cutting.done.wait(30)

        assert len(proxy.store.cut) == 1
        [kept] = list((tmp_path / "cut").rglob("*.json"))
        saved = json.loads(kept.read_text())
        assert saved["request"] == REQUEST
        assert saved["answer"]["content"].startswith('{"facts": [{"content": "Ann likes tea"')
        assert saved["answer"]["finish_reason"] is None

        # Not an answer: the same request goes to the model again.
        assert proxy.store.get(proxy.store.key(json.dumps(REQUEST).encode())) is None


def test_a_finished_answer_is_replayed_without_asking_the_model(tmp_path: Path) -> None:
    upstream = _Upstream(cut=False)
    try:
        with RecordingProxy(upstream.url, tmp_path) as proxy:
            first = _post(proxy.base_url).read()
            again = _post(proxy.base_url).read()
            assert upstream.asked == 1
            assert (proxy.store.hits, proxy.store.misses, proxy.store.cut) == (1, 1, [])
        content = [
            json.loads(line[len("data: ") :])["choices"][0]["delta"].get("content") or ""
            for line in again.decode().splitlines()
            if line.startswith("data: {") and '"choices": [{' in line
        ]
        assert "".join(content) == '{"facts": [{"content": "Ann likes tea"}]}'
        assert b"Ann likes tea" in first
    finally:
        upstream.close()


def test_a_request_whose_client_has_gone_is_not_asked_of_the_model() -> None:
    """A worker whose call timed out while the model served another closes its connection; the
    proxy sees that before it forwards the request, so the model's time goes to the retry only."""
    ours, clients = socket.socketpair()
    with ours, clients:
        clients.sendall(b"POST /v1/chat/completions HTTP/1.0\r\n\r\n")
        ours.recv(65536)  # the proxy has read the whole request
        assert not client_gone(ours)  # still waiting for its answer
        clients.close()
        assert client_gone(ours)
