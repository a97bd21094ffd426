"""HTTP server spans (OpenTelemetry's FastAPI instrumentation), when the process traces
(runtime.tracing): a request's span is the parent of the workflow start it makes, so an API call
and the formation it triggers are one trace.

Query strings are cut from the span attributes: ``?q=`` of a search carries what a user asked.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
from opentelemetry.trace import Span

# Static files and the health probe are polled often and say nothing about memory.
_EXCLUDED = "/static/.*,/healthz"
# Attributes of the old and the stable HTTP conventions that may hold a query string.
_WITH_QUERY = ("http.target", "http.url", "url.full")


def _scrub(span: Span, scope: dict[str, Any]) -> None:
    if not span.is_recording():
        return
    attributes = getattr(span, "attributes", None) or {}  # an SDK span's, set at its start
    for key in _WITH_QUERY:
        value = attributes.get(key)
        if isinstance(value, str) and "?" in value:
            span.set_attribute(key, value.split("?", 1)[0])
    if scope.get("query_string"):
        span.set_attribute("url.query", "")


def instrument(app: FastAPI) -> None:
    FastAPIInstrumentor.instrument_app(app, excluded_urls=_EXCLUDED, server_request_hook=_scrub)
