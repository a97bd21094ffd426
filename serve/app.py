"""The app: ``create_app(memory, keys)`` serves the API under /v1, the memory page under /ui,
OpenAPI at /openapi.json and its docs at /docs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route
from starlette.types import ASGIApp, Lifespan, Message, Receive, Scope, Send

from client.memory_client import MemoryClient
from memory.settings import Settings
from runtime.tracing import tracing_enabled
from serve import (
    errors,
    mcp_http,
    openapi,
    page,
    page_route,
    routes_agents,
    routes_facts,
    routes_health,
    routes_memory,
    routes_sessions,
    routes_users,
)
from serve.keys import ApiKeyStore
from serve.limits import BodyLimit
from serve.rate_limit import RateLimiter
from serve.services import Services
from serve.tracing import instrument

STATIC = Path(__file__).resolve().parent / "static"
# Whose answers are one key's view of memory (the page sets its own: serve/page_route.py).
KEYED_PATHS = ("/v1/", mcp_http.PATH)
KEY_HEADERS = b"Authorization, X-API-Key"


def not_kept(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """An answer's headers with ``Cache-Control: no-store`` in place of its own, and the key's
    headers added to what it varies on."""
    kept = [(k, v) for k, v in headers if k.lower() not in (b"cache-control", b"vary")]
    varies = [v for k, v in headers if k.lower() == b"vary"] + [KEY_HEADERS]
    return [*kept, (b"cache-control", b"no-store"), (b"vary", b", ".join(varies))]


class NotKept:
    """No cache keeps an answer of the API or of MCP. Each is what one key may see (GET
    …/context?user_id=alice): a shared cache keying it by its URL alone would give it to the next
    caller of that URL, with another key or none; and a refusal (401, 403) must not stand in for
    the answer a valid key gets. ``Vary`` names the headers a key comes in, for a cache that
    ignores ``no-store``. Plain ASGI, so that MCP's streamed answers still stream."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if not path.startswith(KEYED_PATHS):
            await self.app(scope, receive, send)
            return

        async def send_not_kept(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": not_kept(list(message.get("headers", [])))}
            await send(message)

        await self.app(scope, receive, send_not_kept)


def _api(settings: Settings, lifespan: Lifespan[FastAPI] | None = None) -> FastAPI:
    """The API's routes, errors and document: what the OpenAPI document is made of."""
    app = FastAPI(
        title="mnemos",
        summary="Long-term memory for AI agents, formed by durable Temporal workflows",
        version="0.1.0",
        lifespan=lifespan,
        # Operation ids are the handlers' names: what a generated client calls its methods.
        generate_unique_id_function=lambda route: route.name,
    )
    errors.install(app)
    openapi.install(app, settings)
    app.add_middleware(BodyLimit)
    app.add_middleware(NotKept)
    for module in (routes_health, routes_agents, routes_sessions, routes_facts, routes_memory):
        app.include_router(module.router)
    app.include_router(routes_users.router)  # erasure (issue 15)
    return app


def openapi_document(settings: Settings | None = None) -> dict[str, Any]:
    """The OpenAPI document of the API, without a server (generated clients start here)."""
    return _api(settings or Settings()).openapi()


def create_app(
    memory: MemoryClient,
    keys: ApiKeyStore,
    *,
    temporal_ui_url: str | None = None,
    close_on_shutdown: bool = False,
    limiter: RateLimiter | None = None,
) -> FastAPI:
    """An app over an open client. With ``close_on_shutdown`` the app closes it when it stops.
    ``limiter``: each key's budgets (default: from ``settings.rate_limit``; tests pass their own
    with a clock they move)."""

    settings: Settings = memory.settings
    limiter = limiter or RateLimiter.from_settings(settings.rate_limit)
    mcp_app, mcp_sessions = mcp_http.mount(mcp_http.build_http_server(memory, limiter), keys)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        try:
            async with mcp_sessions.run():
                yield
        finally:
            if close_on_shutdown:
                await memory.close()

    app = _api(settings, lifespan)
    app.state.services = Services(
        memory=memory,
        keys=keys,
        temporal_ui_url=(temporal_ui_url or settings.temporal.ui_url).rstrip("/"),
        namespace=settings.temporal.namespace,
        limiter=limiter,
    )
    app.include_router(page.router)
    page_route.install(app)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.router.routes.append(Route(mcp_http.PATH, mcp_app))  # MCP, behind the same keys
    if tracing_enabled():
        instrument(app)

    @app.get("/", include_in_schema=False)
    async def root() -> RedirectResponse:
        return RedirectResponse("/ui", status_code=303)

    return app
