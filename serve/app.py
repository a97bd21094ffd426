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
from starlette.types import Lifespan

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
