"""Liveness and readiness: no key needed, nothing about any agent is told."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from serve.auth import Svc
from serve.schemas import Health

router = APIRouter(tags=["health"])
PROBE_SECONDS = 3.0


@router.get("/healthz")
async def health() -> Health:
    """The process answers."""
    return Health(status="ok")


async def _probe(name: str, call: Awaitable[object]) -> tuple[str, str]:
    try:
        await asyncio.wait_for(call, PROBE_SECONDS)
    except Exception as e:
        return name, f"unavailable: {type(e).__name__}"
    return name, "ok"


@router.get("/readyz", response_model=Health, responses={503: {"model": Health}})
async def ready(svc: Svc) -> JSONResponse:
    """Temporal and the store both answer: 200, else 503 naming the one that does not."""
    checks = dict(
        await asyncio.gather(
            _probe("temporal", svc.memory.temporal.service_client.check_health()),
            _probe("store", svc.memory.store.get_agent("readiness-probe")),
        )
    )
    ok = all(v == "ok" for v in checks.values())
    body = Health(status="ok" if ok else "unavailable", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ok else 503)
