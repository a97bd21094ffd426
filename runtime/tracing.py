"""OpenTelemetry tracing of a mnemos process, configured by the standard ``OTEL_*`` variables.

Off by default: with ``OTEL_TRACES_EXPORTER`` unset (or ``none``) no tracer provider is installed,
every span is a no-op and no Temporal interceptor is added. Otherwise:

- ``OTEL_TRACES_EXPORTER``: comma-separated exporters by their entry-point names: ``console``
  (spans as JSON on stdout), ``otlp_proto_http`` (or ``otlp``: OTLP over HTTP, shipped with
  mnemos), ``otlp_proto_grpc`` when ``opentelemetry-exporter-otlp-proto-grpc`` is installed;
- ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ``..._HEADERS``: read
  by the OTLP exporter itself;
- ``OTEL_SERVICE_NAME`` (default: the process's role, e.g. ``mnemos-worker``),
  ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER`` / ``..._ARG``, ``OTEL_BSP_*``: read by the SDK.

A trace crosses processes through Temporal's own tracing interceptor (``interceptors()``): given
to the client, it puts the caller's span context in the headers of a workflow start or signal,
and the worker built on that client continues it through the workflow into each activity, where
memory.tracing's LLM, embedding and store spans become the activity span's children.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from temporalio.client import Interceptor
from temporalio.contrib.opentelemetry import TracingInterceptor

from memory.errors import InvalidInputError

EXPORTER_VARIABLE = "OTEL_TRACES_EXPORTER"
# "otlp" is the spec's name; this package ships the HTTP flavour (no gRPC stack to install).
_ALIASES = {"otlp": "otlp_proto_http"}


class TracingConfigError(InvalidInputError):
    """OTEL_TRACES_EXPORTER names an exporter that is not installed."""


def exporter_names(env: Mapping[str, str] | None = None) -> list[str]:
    """The exporters ``OTEL_TRACES_EXPORTER`` asks for; [] when tracing is off."""
    raw = (os.environ if env is None else env).get(EXPORTER_VARIABLE, "")
    names = [n.strip().lower() for n in raw.split(",") if n.strip()]
    return [_ALIASES.get(n, n) for n in names if n != "none"]


def _exporter(name: str) -> SpanExporter:
    found = entry_points(group="opentelemetry_traces_exporter", name=name)
    if not found:
        available = sorted(e.name for e in entry_points(group="opentelemetry_traces_exporter"))
        raise TracingConfigError(
            f"{EXPORTER_VARIABLE}={name}: no such exporter installed (available: {available})"
        )
    exporter: SpanExporter = next(iter(found)).load()()
    return exporter


def exporters(env: Mapping[str, str] | None = None) -> dict[str, SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names, by name; TracingConfigError for one that is
    not installed (before anything is configured: a typo fails the process at start)."""
    return {name: _exporter(name) for name in exporter_names(env)}


def _processor(name: str, exporter: SpanExporter) -> SpanProcessor:
    # The console shows each span as it ends; remote exporters send batches off the hot path.
    return SimpleSpanProcessor(exporter) if name == "console" else BatchSpanProcessor(exporter)


def configure_tracing(
    service: str, *, env: Mapping[str, str] | None = None
) -> TracerProvider | None:
    """Install the process's tracer provider from ``OTEL_*`` (once; later calls return the one
    installed). None when tracing is off. ``service``: the default ``service.name``. The provider
    flushes its batches at interpreter exit (the SDK's ``shutdown_on_exit``)."""
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    variables = os.environ if env is None else env
    chosen = exporters(variables)
    if not chosen:
        return None
    # Resource.create reads OTEL_SERVICE_NAME itself, but an attribute given here would win.
    named = {} if "OTEL_SERVICE_NAME" in variables else {SERVICE_NAME: service}
    provider = TracerProvider(resource=Resource.create(named))
    for name, exporter in chosen.items():
        provider.add_span_processor(_processor(name, exporter))
    trace.set_tracer_provider(provider)
    return provider


def tracing_enabled() -> bool:
    """Whether a tracer provider records spans in this process (configured here or by a host
    application, e.g. ``opentelemetry-instrument`` or a test)."""
    return isinstance(trace.get_tracer_provider(), TracerProvider)


def interceptors() -> Sequence[Interceptor]:
    """Temporal's tracing interceptor when tracing is on: for ``Client.connect``, so the client's
    starts and signals and every worker built on it carry the trace. Workflows started without a
    caller's span (the cold-sessions Schedule) get spans too, as roots of their own traces."""
    if not tracing_enabled():
        return []
    return [TracingInterceptor(always_create_workflow_spans=True)]
