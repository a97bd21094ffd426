"""Heartbeats around long provider calls, so a dead worker is noticed within the heartbeat timeout
instead of after the whole start-to-close timeout of an LLM call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from datetime import timedelta

from temporalio import activity


async def heartbeating[T](work: Awaitable[T]) -> T:
    """Await ``work`` while heartbeating at a third of the activity's heartbeat timeout (if it has one)."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await work
    every = max(timeout / 3, timedelta(milliseconds=100)).total_seconds()

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    beater = asyncio.create_task(beat())
    try:
        return await work
    finally:
        beater.cancel()
