"""The domain's errors as HTTP answers: a status and a message, never a stack trace."""

from __future__ import annotations

import uuid

import structlog
from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse

from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
    ProviderError,
)

log = structlog.get_logger("serve")

_STATUS: list[tuple[type[Exception], int]] = [
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (InvalidInputError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (ConflictError, status.HTTP_409_CONFLICT),
    (EmbeddingMismatchError, status.HTTP_409_CONFLICT),
    (ProviderError, status.HTTP_502_BAD_GATEWAY),
]


def status_of(exc: Exception) -> int | None:
    for kind, code in _STATUS:
        if isinstance(exc, kind):
            return code
    return None


async def _domain(_: Request, exc: Exception) -> JSONResponse:
    code = status_of(exc) or status.HTTP_500_INTERNAL_SERVER_ERROR
    return JSONResponse({"detail": str(exc)}, status_code=code)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    error_id = uuid.uuid4().hex[:12]
    log.error("unhandled error", error_id=error_id, path=request.url.path, exc_info=exc)
    return JSONResponse(
        {"detail": "internal error", "error_id": error_id},
        status_code=status.HTTP_500_INTERNAL_SERVER_ERROR,
    )


def install(app: FastAPI) -> None:
    for kind, _ in _STATUS:
        app.add_exception_handler(kind, _domain)
    app.add_exception_handler(Exception, _unexpected)
