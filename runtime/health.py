"""The worker's liveness endpoint: ``GET /healthz`` answered by the worker's own event loop.

The ``/metrics`` endpoint is served by the Temporal SDK's Rust core, on its own threads: it keeps
answering while the Python event loop is stuck (a blocking call in an activity, a deadlock), and
such a worker polls nothing more, so its steps time out and go elsewhere, but a probe on
``/metrics`` never restarts it. An answer from this server proves the loop turns: it can only
answer from the loop. It starts once the worker polls (a startup probe on it waits for that).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

_OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n"
_NOT_FOUND = (
    b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n"
    b"Connection: close\r\n\r\nnot found\n"
)
_HEAD_LIMIT = 8192  # a probe's request line and headers


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        method, _, rest = head[:_HEAD_LIMIT].partition(b" ")
        path = rest.partition(b" ")[0]
        ok = method in (b"GET", b"HEAD") and path == b"/healthz"
        writer.write(_OK if ok else _NOT_FOUND)
        await writer.drain()
    except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        pass  # a client that went away or sent no request: nothing to answer
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


@contextlib.asynccontextmanager
async def serving_health(bind: str) -> AsyncIterator[None]:
    """Serve ``GET /healthz`` on ``host:port`` for the duration of the block ('' : not at all)."""
    if not bind:
        yield
        return
    host, _, port = bind.rpartition(":")
    server = await asyncio.start_server(_answer, host, int(port), limit=_HEAD_LIMIT)
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()
