"""Every error the app answers, in one shape: RFC 9457 ``application/problem+json``.

``type`` names the kind of problem (a URN: stable, never fetched), ``title`` is its short summary,
``detail`` this occurrence, ``instance`` the request's path, and a 422 lists the field errors. A
405 carries ``Allow`` with every method of the path. A stack trace never leaves the server: a
500 answers an ``error_id`` to find it in the logs. Temporal or the store unreachable is a 503.
"""

from __future__ import annotations

import json
import re
import uuid
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import FastAPI, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from temporalio.service import RPCError

from client.failures import RunsLeftError
from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
    ProviderError,
    StoreUnavailableError,
)
from runtime.connection import TEMPORAL_TRANSIENT

log = structlog.get_logger("serve")
PROBLEM_JSON = "application/problem+json"

_STATUS: list[tuple[type[Exception], int]] = [
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (InvalidInputError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (ConflictError, status.HTTP_409_CONFLICT),
    (EmbeddingMismatchError, status.HTTP_409_CONFLICT),
    (ProviderError, status.HTTP_502_BAD_GATEWAY),
    (RunsLeftError, status.HTTP_503_SERVICE_UNAVAILABLE),  # a forget done but for its runs
    (StoreUnavailableError, status.HTTP_503_SERVICE_UNAVAILABLE),  # _store_unavailable
]

# Temporal cannot be reached for now (runtime.connection.TEMPORAL_TRANSIENT): the same request
# may succeed later, so 503. Any other RPC error is the deployment's to mend: a 500 with its
# error_id.
TEMPORAL_UNREACHABLE = "the workflow service (Temporal) cannot be reached"

_SLUGS = {
    400: "bad-request",
    401: "unauthorized",
    403: "forbidden",
    404: "not-found",
    405: "method-not-allowed",
    409: "conflict",
    413: "content-too-large",
    415: "unsupported-media-type",
    422: "invalid-input",
    429: "too-many-requests",
    500: "internal-error",
    502: "provider-error",
    503: "unavailable",
}


class FieldError(BaseModel):
    """One invalid field of a 422: where it is, and what is wrong with it."""

    loc: list[str | int] = Field(description='Where: e.g. ["body", "messages", 0, "content"]')
    message: str
    type: str = Field(description="The validation rule that failed (pydantic's error type)")


class Problem(BaseModel):
    """An RFC 9457 problem detail."""

    type: str = Field(description="The kind of problem, a stable URN (urn:mnemos:problem:…)")
    title: str
    status: int = Field(ge=400, le=599)
    detail: str = ""
    instance: str = Field("", description="The request path")
    errors: list[FieldError] | None = Field(None, description="422: every invalid field")
    error_id: str | None = Field(None, description="500: the id of the logged error")


def _clean(value: Any) -> Any:
    """Text that UTF-8 can encode: an input echoed in a message may hold a lone surrogate."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


class ProblemResponse(JSONResponse):
    media_type = PROBLEM_JSON

    def render(self, content: Any) -> bytes:
        return json.dumps(_clean(content), ensure_ascii=False, separators=(",", ":")).encode()


def problem(
    request: Request,
    code: int,
    detail: str,
    *,
    errors: list[FieldError] | None = None,
    headers: dict[str, str] | None = None,
    error_id: str | None = None,
) -> ProblemResponse:
    body = Problem(
        type=f"urn:mnemos:problem:{_SLUGS.get(code, str(code))}",
        title=HTTPStatus(code).phrase,
        status=code,
        detail=detail,
        instance=request.url.path,
        errors=errors,
        error_id=error_id,
    )
    return ProblemResponse(body.model_dump(exclude_none=True), code, headers=headers)


def status_of(exc: Exception) -> int | None:
    for kind, code in _STATUS:
        if isinstance(exc, kind):
            return code
    return None


async def _domain(request: Request, exc: Exception) -> ProblemResponse:
    code = status_of(exc) or status.HTTP_500_INTERNAL_SERVER_ERROR
    return problem(request, code, str(exc))


def temporal_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` is Temporal unreachable for now, which a retry may get past."""
    return isinstance(exc, RPCError) and exc.status in TEMPORAL_TRANSIENT


async def _temporal(request: Request, exc: Exception) -> ProblemResponse:
    if not temporal_unreachable(exc):
        return await _unexpected(request, exc)
    assert isinstance(exc, RPCError)
    # Its message names the transport's failure (addresses, TLS): the logs', not the caller's.
    log.warning("Temporal unreachable", path=request.url.path, error=exc.message)
    detail = f"{TEMPORAL_UNREACHABLE}; retry later"
    return problem(request, status.HTTP_503_SERVICE_UNAVAILABLE, detail)


async def _store_unavailable(request: Request, exc: Exception) -> ProblemResponse:
    # The driver's text (addresses, paths) is the cause's: the logs', not the caller's.
    log.warning("store unavailable", path=request.url.path, error=str(exc.__cause__ or exc))
    return problem(request, status.HTTP_503_SERVICE_UNAVAILABLE, str(exc))


def allowed_methods(request: Request) -> list[str]:
    """Every method the document gives this path (Starlette's own 405 names one route's only)."""
    methods: set[str] = set()
    for template, item in request.app.openapi().get("paths", {}).items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, request.url.path):
            methods |= {m.upper() for m in item}
    return sorted(methods)  # FastAPI answers no HEAD for a GET route: not listed


async def _http(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, HTTPException)
    headers = dict(exc.headers or {})
    if exc.status_code == status.HTTP_405_METHOD_NOT_ALLOWED:
        methods = allowed_methods(request)  # none for a path outside the API (the page)
        if methods:
            headers["Allow"] = ", ".join(methods)
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    return problem(request, exc.status_code, detail, headers=headers)


def _field_error(error: dict[str, Any]) -> FieldError:
    message = str(error.get("msg", "invalid"))
    return FieldError(
        loc=[p if isinstance(p, int) else str(p) for p in error.get("loc", ())],
        message=message,
        type=str(error.get("type", "value_error")),
    )


async def _validation(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    for e in exc.errors():
        if e.get("type") == "json_invalid":
            # A body that is no JSON has no fields to name: its loc is a character offset.
            why = e.get("ctx", {}).get("error", "not valid JSON")
            offset = e["loc"][-1] if e.get("loc") else "?"
            return problem(
                request, status.HTTP_400_BAD_REQUEST, f"the body is not JSON: {why} at {offset}"
            )
    errors = [_field_error(e) for e in exc.errors()]
    where = ", ".join(".".join(str(p) for p in e.loc) for e in errors[:5])
    return problem(
        request,
        status.HTTP_422_UNPROCESSABLE_CONTENT,
        f"the request is invalid: {where}" if where else "the request is invalid",
        errors=errors,
    )


async def _unexpected(request: Request, exc: Exception) -> ProblemResponse:
    error_id = uuid.uuid4().hex[:12]
    log.error("unhandled error", error_id=error_id, path=request.url.path, exc_info=exc)
    return problem(request, 500, "internal error", error_id=error_id)


def install(app: FastAPI) -> None:
    for kind, _ in _STATUS:
        app.add_exception_handler(kind, _domain)
    app.add_exception_handler(StoreUnavailableError, _store_unavailable)  # _domain, and logged
    app.add_exception_handler(RPCError, _temporal)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(Exception, _unexpected)
