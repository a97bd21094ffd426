"""A request body has a size limit: 413 beyond it, before the body is parsed or stored.

Checked on ``Content-Length`` when the client sends it and on the bytes actually received when it
streams (chunked), so a lying or absent header cannot get past the limit.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serve.errors import problem

# 1,000 messages of 100,000 characters would be ~100 MB: a batch that large is a bug, not a turn.
MAX_BODY_BYTES = 8 * 1024 * 1024


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"the request body exceeds {self.max_bytes} bytes"
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            await problem(Request(scope), 413, detail)(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            # Raised inside the body read: FastAPI re-raises an HTTPException from there, and the
            # app's handler answers it as a problem like any other.
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(413, detail)
            return message

        await self.app(scope, counted, send)
