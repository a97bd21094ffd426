"""One place that turns SDK exceptions and HTTP statuses into ProviderError / MalformedOutputError
(and ContextExceededError: a server's refusal of a request longer than its model's context).

Temporal owns retries, so the only job here is to say *whether* a retry can help and how long the
provider asked us to wait. Messages are redacted: an API key must never reach a log line or a
workflow history, even when a server echoes it back.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import math
import re
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pydantic

from memory.errors import (
    InputRefusedError,
    MalformedOutputError,
    ProviderError,
    WindowTooLargeError,
)

if TYPE_CHECKING:
    import openai

# The SDKs' exceptions are looked up among the modules already imported, never imported here:
# an exception of an SDK can only come from an SDK that is loaded, and this module is imported by
# every worker and command (activities/errors.py), most of which use neither SDK (importing both
# took ~1 s of each process's start). (module, class) pairs, found only once the module is loaded.
#
# Transport failures, retryable. google-genai sends through httpx2 by default, through httpx when
# GOOGLE_GENAI_HTTP_CLIENT=httpx (or an httpx client is passed in), and through aiohttp when that
# is installed and its async client is configured for it; the packages share no exception classes,
# so all count. aiohttp's asyncio.TimeoutError is TimeoutError.
_TIMEOUTS = (
    ("openai", "APITimeoutError"),
    ("httpx2", "TimeoutException"),
    ("httpx", "TimeoutException"),
    ("aiohttp", "ServerTimeoutError"),
)
_CONNECTION_FAILURES = (
    ("openai", "APIConnectionError"),
    ("httpx2", "TransportError"),
    ("httpx", "TransportError"),
    ("aiohttp", "ClientConnectionError"),
    ("aiohttp", "ClientPayloadError"),  # a body cut short or garbled in transfer
)
_NOT_JSON = (("google.genai.errors", "UnknownApiResponseError"),)  # an HTTP body that is not JSON


def _loaded(
    base: tuple[type[BaseException], ...], named: Iterable[tuple[str, str]]
) -> tuple[type[BaseException], ...]:
    """``base``, plus each (module, class) whose module has been imported (by the SDK)."""
    found: list[type[BaseException]] = []
    for module_name, class_name in named:
        module = sys.modules.get(module_name)
        extra = getattr(module, class_name, None) if module is not None else None
        if isinstance(extra, type) and issubclass(extra, BaseException):
            found.append(extra)
    return (*base, *found)


# 408 request timeout, 409 lock/conflict, 429 rate limit: the same request may succeed later.
_RETRYABLE_STATUSES = frozenset({408, 409, 429})
# Key shapes of OpenAI (sk-…) and Google (AIza…), redacted even when we were not told the key.
_KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}|\bAIza[0-9A-Za-z_\-]{20,}")
_MAX_MESSAGE = 500
# How servers refuse a request longer than their model's context, in an HTTP 400 (or an error
# event): OpenAI's code, llama.cpp's type and message, vLLM's (and Mistral's) message, Gemini's,
# LM Studio's, the "prompt is too long" of Anthropic-style servers, and TGI's two (HTTP 422).
_CONTEXT_REFUSAL = re.compile(
    r"context_length_exceeded|exceed_context_size|exceeds the available context size"
    r"|maximum context length|input token count \(?\d*\)? ?exceeds|context length of only"
    r"|prompt is too long|`inputs` tokens \+ `max_new_tokens` must be|`inputs` must have less than",
    re.IGNORECASE,
)
# A refusal that states the answer's cap and the model's context: vLLM's older message (OpenAI's
# of old), vLLM's newer one, TGI's. When the cap alone is over the context no input is small
# enough, so splitting would pass every message over: mnemos was not told how small the model is.
_CAP_AND_CONTEXT = (
    re.compile(
        r"maximum context length is (?P<context>\d+) tokens.*?\(\d+ in the messages, "
        r"(?P<cap>\d+) in the completion\)",
        re.IGNORECASE | re.DOTALL,
    ),
    re.compile(
        r"is too large: (?P<cap>\d+)\. This model's maximum context length is (?P<context>\d+)",
        re.IGNORECASE,
    ),
    re.compile(
        r"`max_new_tokens` must be <= (?P<context>\d+)\. Given: \d+ `inputs` tokens and "
        r"(?P<cap>\d+) `max_new_tokens`",
        re.IGNORECASE,
    ),
)
# Statuses a context refusal comes with: a 400, TGI's 422 (validation), or none (an error event).
# Older llama.cpp answered a 500, left retryable: a 500 says nothing certain about the request.
_CONTEXT_REFUSAL_STATUSES = (None, 400, 422)
_PAYLOAD_TOO_LARGE = 413


class ContextExceededError(WindowTooLargeError, ProviderError):
    """The server refused the request as longer than its model's context (HTTP 400 saying so, or
    413): the same request is refused again, a smaller one is not. A window too large, in the
    domain's terms: an extraction's window is split, a consolidation's buffer halved; the steps
    with no input to split (the decision) take their fallback (activities/errors.py)."""

    error_type = "ContextExceeded"

    def __init__(self, message: str, *, status: int | None, provider: str) -> None:
        super().__init__(message, retryable=False, status=status, provider=provider)


def unfit(err: pydantic.ValidationError) -> str:
    """Where and why an answer does not fit its schema, never what it said: pydantic's own
    message quotes each refused value (``input_value='Bea was diagnosed with …'``), which would
    carry a person's words into the worker's logs and trace spans, where no forget reaches."""
    problems = err.errors(include_url=False, include_context=False, include_input=False)
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'answer'}: {e['msg']}" for e in problems
    )


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    text = _KEY_PATTERN.sub("[redacted]", text)
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "…"


def is_retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUSES or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``."""
    if not headers:
        return None
    headers = {name.lower(): value for name, value in headers.items()}
    if (millis := headers.get("retry-after-ms")) is not None:
        with contextlib.suppress(ValueError):
            return _non_negative(float(millis) / 1000)
    value = headers.get("retry-after")
    if value is None:
        return None
    with contextlib.suppress(ValueError):
        return _non_negative(float(value))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return _non_negative(when.timestamp() - time.time())


def _non_negative(seconds: float) -> float | None:
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _google_retry_delay(details: Any) -> float | None:
    """Gemini puts the wait in the body: ``error.details[]`` holds a google.rpc.RetryInfo with
    ``"retryDelay": "37s"``."""
    error = details.get("error", details) if isinstance(details, dict) else None
    if not isinstance(error, dict):
        return None
    for item in error.get("details") or []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            with contextlib.suppress(ValueError):
                return _non_negative(float(delay[:-1]))
    return None


def _refuses_context(status: int | None, *said: object) -> bool:
    """A server's answer that says the request exceeds its model's context: a 413, or a 400 (a
    422, a status-less error event) whose code, type or message says so (``_CONTEXT_REFUSAL``)."""
    if status == _PAYLOAD_TOO_LARGE:
        return True
    return status in _CONTEXT_REFUSAL_STATUSES and any(
        isinstance(text, str) and _CONTEXT_REFUSAL.search(text) for text in said
    )


def _cap_alone_over_context(message: str) -> bool:
    """The refusal says the answer's cap (max_tokens) is itself at least the model's context."""
    for pattern in _CAP_AND_CONTEXT:
        if (found := pattern.search(message)) is not None:
            return int(found["cap"]) >= int(found["context"])
    return False


def _context_refusal(
    status: int | None, message: str, where: str, *, provider: str
) -> ProviderError:
    """The error for a refusal over the context: a window too large, unless the cap alone is over
    it, which no smaller window fixes and which fails the run, saying what to set."""
    if _cap_alone_over_context(message):
        return ProviderError(
            f"{provider} {where}, the answer's max_tokens alone exceeds the model's context: set "
            f"MNEMOS_MODELS__CONTEXT_TOKENS to the model's context (mnemos then sizes max_tokens "
            f"to fit): {message}",
            retryable=False,
            status=status,
            provider=provider,
        )
    return ContextExceededError(
        f"{provider} {where}, the request exceeds the model's context: {message}",
        status=status,
        provider=provider,
    )


def _status_error(
    status: int,
    message: str,
    retry_after: float | None,
    *,
    provider: str,
    said: tuple[object, ...] = (),
) -> ProviderError:
    if _refuses_context(status, message, *said):
        return _context_refusal(status, message, f"HTTP {status}", provider=provider)
    return ProviderError(
        f"{provider} HTTP {status}: {message}",
        retryable=is_retryable_status(status),
        status=status,
        retry_after=retry_after if is_retryable_status(status) else None,
        provider=provider,
    )


def to_provider_error(
    exc: BaseException, *, provider: str, secrets: Iterable[str | None] = ()
) -> ProviderError | None:
    """The ProviderError for ``exc``; None when it is no provider failure (a bug: let it raise)."""
    secrets = tuple(secrets)
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, pydantic.ValidationError):
        return MalformedOutputError(
            f"{provider} output does not fit the schema: {unfit(exc)}", provider=provider
        )
    if (answered := _openai_answer(exc, provider, secrets)) is not None:
        return answered
    if isinstance(exc, _loaded((TimeoutError,), _TIMEOUTS)):  # before the connection failures
        return _failed(provider, f"timed out ({type(exc).__name__})")
    if isinstance(exc, _loaded((ConnectionError,), _CONNECTION_FAILURES)):
        # The name too: a closed connection (ReadError, RemoteProtocolError) has no text.
        detail = redact(str(exc), secrets)
        return _failed(provider, f"connection failed ({type(exc).__name__}): {detail}")
    if (answered := _gemini_status(exc, provider, secrets)) is not None:
        return answered
    if isinstance(exc, _loaded((json.JSONDecodeError,), _NOT_JSON)):
        return _failed(provider, f"sent a non-JSON response: {redact(str(exc), secrets)}")
    return _openai_stream_error(exc, provider, secrets)


def _failed(provider: str, what: str) -> ProviderError:
    return ProviderError(f"{provider} {what}", retryable=True, provider=provider)


def _openai_answer(
    exc: BaseException, provider: str, secrets: tuple[str | None, ...]
) -> ProviderError | None:
    """What the OpenAI SDK raises of an answer: cut short, filtered, an HTTP status, a body it
    could not read. None for anything else (its transport failures are classed with the others)."""
    if "openai" not in sys.modules:
        return None
    import openai  # loaded already (above): no import cost

    match exc:
        case openai.LengthFinishReasonError():
            return MalformedOutputError(
                f"{provider} output does not fit the schema: {redact(str(exc), secrets)}",
                provider=provider,
            )
        case openai.ContentFilterFinishReasonError():
            return InputRefusedError(
                f"{provider} refused: {redact(str(exc), secrets)}", provider=provider
            )
        case openai.APIStatusError() if getattr(exc, "code", None) == "content_filter":
            # Azure OpenAI's content filter: HTTP 400 whose error code names it.
            return InputRefusedError(
                f"{provider} refused: {redact(exc.message, secrets)}", provider=provider
            )
        case openai.APIStatusError():
            retry_after = parse_retry_after(dict(exc.response.headers))
            return _status_error(
                exc.status_code,
                redact(_said_in_status(exc), secrets),
                retry_after,
                provider=provider,
                said=(exc.code, exc.type),  # OpenAI's code, llama.cpp's type
            )
        case openai.APIResponseValidationError():
            return _failed(provider, f"sent an unexpected response: {redact(str(exc), secrets)}")
    return None


def _gemini_status(
    exc: BaseException, provider: str, secrets: tuple[str | None, ...]
) -> ProviderError | None:
    """The google-genai SDK's error of an HTTP status; None for anything else."""
    if "google.genai.errors" not in sys.modules:
        return None
    from google.genai import errors as genai_errors  # loaded already (above)

    if not isinstance(exc, genai_errors.APIError):
        return None
    message = redact(f"{exc.status or ''} {exc.message or ''}".strip(), secrets)
    headers = dict(exc.response.headers) if exc.response is not None else {}
    retry_after = parse_retry_after(headers)
    if retry_after is None:
        retry_after = _google_retry_delay(exc.details)
    return _status_error(exc.code, message, retry_after, provider=provider)


def _openai_stream_error(
    exc: BaseException, provider: str, secrets: tuple[str | None, ...]
) -> ProviderError | None:
    """A plain openai.APIError (after its subclasses, classed above): an SSE error event in a
    streamed answer whose HTTP status was 200. The server failed mid-answer; a retry may
    succeed. None for anything else."""
    if "openai" not in sys.modules:
        return None
    import openai  # loaded already (above)

    if not isinstance(exc, openai.APIError):
        return None
    status = _body_status(exc.body)
    where = f" ({status})" if status is not None else ""
    if _refuses_context(status, exc.message, exc.code, exc.type):
        # A server that refuses an over-long prompt only once its stream has begun.
        return _context_refusal(
            status, redact(exc.message, secrets), f"stream error{where}", provider=provider
        )
    return ProviderError(
        f"{provider} stream error{where}: {redact(exc.message, secrets)}",
        retryable=True,
        status=status,
        provider=provider,
    )


def _said_in_status(exc: openai.APIStatusError) -> str:
    """The SDK's message, and the body's error when that is a bare string (TGI's ``{"error":
    "Input validation error: ..."}``), which the SDK leaves out of its message."""
    if isinstance(exc.body, str) and exc.body and exc.body not in exc.message:
        return f"{exc.message} - {exc.body}"
    return exc.message


def _body_status(body: object) -> int | None:
    """The HTTP-like status an error event's body carries in ``status`` or ``code``, if any."""
    if not isinstance(body, dict):
        return None
    for key in ("status", "code"):
        value = body.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            number = int(value)
            if 100 <= number <= 599:
                return number
    return None


@contextlib.contextmanager
def provider_errors(provider: str, secrets: Iterable[str | None] = ()) -> Iterator[None]:
    """Translate SDK failures raised inside the block. ``from None``: the SDK exception's text may
    hold the key or a whole request, and a chained cause would carry it into logs and histories."""
    try:
        yield
    except Exception as exc:
        mapped = to_provider_error(exc, provider=provider, secrets=secrets)
        if mapped is None or mapped is exc:
            raise
        raise mapped from None
