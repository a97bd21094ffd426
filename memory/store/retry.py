"""Transactions run again when a concurrent writer got in first, once for every server backend:
planning is pure, so the next attempt reads what the winner wrote and decides again. Jittered
exponential backoff, so that contenders spread out instead of colliding again."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable

import structlog

log = structlog.get_logger(__name__)


async def retry_conflicts[T](
    attempt: Callable[[], Awaitable[T]],
    conflict: Callable[[Exception], bool],
    *,
    attempts: int,
    first_delay: float,
    max_delay: float = 0.2,
) -> T:
    """``attempt()`` until it returns, run again after an exception ``conflict`` accepts; the
    last attempt's, and any other, exception reaches the caller."""
    for n in range(1, attempts + 1):
        try:
            return await attempt()
        except Exception as exc:
            if n == attempts or not conflict(exc):
                raise
            log.debug("store_retry", attempt=n, error=type(exc).__name__)
        await asyncio.sleep(random.uniform(0, min(max_delay, first_delay * 2 ** (n - 1))))
    raise AssertionError("unreachable: the last attempt returns or raises")
