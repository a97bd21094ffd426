"""Spans of the domain core: each LLM call, embedding batch and store read or commit.

Only the OpenTelemetry API is used here: with no tracer provider installed (the default) every
span is a no-op costing about a microsecond. Which provider and exporter are installed is the
process's business (runtime/tracing.py reads the standard ``OTEL_*`` variables), and so is the
propagation through Temporal (its tracing interceptor): a span opened here inside an activity is
a child of that activity's span, so one trace runs from the HTTP request to each LLM call.

The spans are attached at the narrowest shared points, once: ``LLMProvider``, ``Embedder`` and
``PlannedStore`` wrap the methods every subclass implements (``trace_llm_methods``,
``trace_embed_method``, ``trace_store_methods`` from their ``__init_subclass__``), so no provider
or backend knows about tracing and a new one is traced by being one.

Attributes hold ids, counts, sizes, model names and outcomes, never message, fact or prompt text
(tests/test_tracing.py checks it): traces leave the process for collectors with other retention
and other readers than the store.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, Protocol

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from memory.errors import InvalidModelOutputError, MalformedOutputError, ProviderError

TRACER_NAME = "mnemos"
_tracer = trace.get_tracer(TRACER_NAME)

# An LLM call or embedding made by a wrapper that calls its parent's traced method is one call:
# only the outermost wrapper opens a span.
_inside: contextvars.ContextVar[str | None] = contextvars.ContextVar("mnemos_span", default=None)

AsyncMethod = Callable[..., Awaitable[Any]]
_REJECTED = "rejected_output"


def _error_kind(err: BaseException) -> str:
    """What went wrong, by class: an exception's message may quote a model's output."""
    if isinstance(err, MalformedOutputError | InvalidModelOutputError):
        return _REJECTED
    if isinstance(err, ProviderError):
        return "provider_error" if err.retryable else "provider_refused"
    return type(err).__name__


def _fail(span: Span, err: BaseException) -> None:
    span.set_attribute("error.type", _error_kind(err))
    span.set_status(Status(StatusCode.ERROR, _error_kind(err)))


@contextmanager
def span(name: str, **attributes: AttributeValue | None) -> Iterator[Span]:
    """A span of the current trace; ``None`` attributes are left out. Errors set the span's status
    and ``error.type`` by class, never by message (no ``record_exception``: its text may quote
    content)."""
    attrs = {k: v for k, v in attributes.items() if v is not None}
    with _tracer.start_as_current_span(
        name, attributes=attrs, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as err:
            _fail(current, err)
            raise


def mark_rejected(err: BaseException) -> None:
    """On the current span (an activity's): this attempt's model output was rejected, so the step
    is retried, and after its last attempt takes its fallback (the run is then "degraded")."""
    current = trace.get_current_span()
    current.set_attribute("mnemos.output_rejected", True)
    current.set_attribute("mnemos.rejected_kind", type(err).__name__)


# ------------------------------------------------------------------ LLM calls


class _Request(Protocol):
    """What an LLM span reads from memory.llm.base.LLMRequest (no import: base imports us)."""

    model: str
    system: str
    prompt: str
    temperature: float
    max_output_tokens: int
    attempt: int

    @property
    def task(self) -> str: ...


def _llm_attributes(provider: str, request: _Request) -> dict[str, AttributeValue]:
    # gen_ai.*: OpenTelemetry's semantic conventions for generative AI clients.
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": request.model,
        "gen_ai.request.temperature": request.temperature,
        "gen_ai.request.max_tokens": request.max_output_tokens,
        "mnemos.llm.task": request.task,
        "mnemos.llm.attempt": request.attempt,
        "mnemos.llm.prompt_chars": len(request.system) + len(request.prompt),
    }


class Answered(NamedTuple):
    """One answer a provider returned: what it cost, whatever the step then made of it."""

    task: str
    provider: str
    model: str
    input_tokens: int
    output_tokens: int


# The collectors of every ``answers_returned()`` open in this context, outermost first: the
# worker's metrics count the answers per activity attempt (runtime.metrics), and the LLM
# activities report them as what their step paid for (activities/paid.py), those the step's
# checks rejected included. Chained, not replaced: an inner collector hiding answers from an
# outer one would leave them out of the metrics.
_answered: contextvars.ContextVar[tuple[list[Answered], ...]] = contextvars.ContextVar(
    "mnemos_answered", default=()
)


@contextmanager
def answers_returned() -> Iterator[list[Answered]]:
    """Collect every LLM answer returned in this context (and the tasks it starts), as every
    collector around it does too."""
    answered: list[Answered] = []
    token = _answered.set((*_answered.get(), answered))
    try:
        yield answered
    finally:
        _answered.reset(token)


def _record_usage(current: Span, task: str, result: Any) -> None:
    usage = getattr(result, "usage", None)
    if usage is None:
        return
    current.set_attribute("gen_ai.response.model", usage.model)
    current.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    current.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    collectors = _answered.get()
    if collectors:
        one = Answered(task, usage.provider, usage.model, usage.input_tokens, usage.output_tokens)
        for answered in collectors:
            answered.append(one)


def _traced_llm(method: AsyncMethod) -> AsyncMethod:
    @functools.wraps(method)
    async def traced(self: Any, request: _Request, *args: Any, **kwargs: Any) -> Any:
        if _inside.get() == "llm":
            return await method(self, request, *args, **kwargs)
        token = _inside.set("llm")
        try:
            with _tracer.start_as_current_span(
                f"llm {request.task}",
                kind=SpanKind.CLIENT,
                attributes=_llm_attributes(self.name, request),
                record_exception=False,
                set_status_on_exception=False,
            ) as current:
                try:
                    result = await method(self, request, *args, **kwargs)
                except BaseException as err:
                    _fail(current, err)
                    if isinstance(err, MalformedOutputError):  # an unusable answer costs too
                        _record_usage(current, request.task, err)
                    # An unusable answer degrades this attempt: the step retries, then falls back.
                    current.set_attribute("mnemos.llm.degraded", _error_kind(err) == _REJECTED)
                    raise
                _record_usage(current, request.task, result)
                current.set_attribute("mnemos.llm.degraded", False)
                return result
        finally:
            _inside.reset(token)

    traced.__mnemos_traced__ = True  # type: ignore[attr-defined]
    return traced


# ------------------------------------------------------------------ embeddings


def _traced_embed(method: AsyncMethod) -> AsyncMethod:
    @functools.wraps(method)
    async def traced(self: Any, texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        if _inside.get() == "embed":
            return await method(self, texts, *args, **kwargs)
        token = _inside.set("embed")
        try:
            with span(
                "embed",
                **{
                    "mnemos.embedding.model": self.model,
                    "mnemos.embedding.texts": len(texts),
                    "mnemos.embedding.chars": sum(len(t) for t in texts),
                },
            ) as current:
                batch = await method(self, texts, *args, **kwargs)
                current.set_attribute("mnemos.embedding.dimension", int(batch.dimension))
                return batch
        finally:
            _inside.reset(token)

    traced.__mnemos_traced__ = True  # type: ignore[attr-defined]
    return traced


# ------------------------------------------------------------------ store


def _backend(store: Any) -> str:
    """ "sqlite", "mongo": the backend's class name (SQLiteStore, MongoStore) without "Store"."""
    return type(store).__name__.removesuffix("Store").lower()


def _rows(result: Any) -> int | None:
    if isinstance(result, Sequence | Mapping) and not isinstance(result, str | bytes):
        return len(result)
    return None


def _traced_store(name: str, method: AsyncMethod) -> AsyncMethod:
    @functools.wraps(method)
    async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        with span(
            f"store {name}",
            **{"db.system.name": _backend(self), "db.operation.name": name},
        ) as current:
            result = await method(self, *args, **kwargs)
            if (rows := _rows(result)) is not None:
                current.set_attribute("mnemos.store.rows", rows)
            return result

    traced.__mnemos_traced__ = True  # type: ignore[attr-defined]
    return traced


def _traced_transaction(method: AsyncMethod) -> AsyncMethod:
    """The store's one transaction per write (PlannedStore._transact): named by its request."""

    @functools.wraps(method)
    async def traced(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        kind = type(request).__name__.removesuffix("Request").lower() or "write"
        with span(
            f"store commit {kind}",
            **{"db.system.name": _backend(self), "db.operation.name": f"commit {kind}"},
        ):
            return await method(self, request, *args, **kwargs)

    traced.__mnemos_traced__ = True  # type: ignore[attr-defined]
    return traced


# ------------------------------------------------------------------ wrapping


def _wrap(cls: type, name: str, wrapper: Callable[[AsyncMethod], AsyncMethod]) -> None:
    """Replace ``cls.name`` (its own or inherited) by its traced version, unless abstract (the
    concrete subclass is wrapped instead) or traced already (inherited from a wrapped class)."""
    method = getattr(cls, name, None)
    if (
        method is None
        or getattr(method, "__isabstractmethod__", False)
        or getattr(method, "__mnemos_traced__", False)
    ):
        return
    setattr(cls, name, wrapper(method))


def trace_llm_methods(cls: type) -> None:
    _wrap(cls, "generate_structured", _traced_llm)


def trace_embed_method(cls: type) -> None:
    _wrap(cls, "embed", _traced_embed)


def trace_store_methods(cls: type, reads: Sequence[str]) -> None:
    for name in reads:
        _wrap(cls, name, functools.partial(_traced_store, name))
    _wrap(cls, "_transact", _traced_transaction)
