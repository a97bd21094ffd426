"""Heartbeats around activities, so a dead worker is noticed within the heartbeat timeout instead
of after the whole start-to-close timeout of the step."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities import beats
from activities.errors import classified
from activities.paid import Paid, beat
from memory import tracing
from memory.errors import InvalidModelOutputError, MalformedOutputError, UnusableOutputError
from memory.llm.base import Retry


async def heartbeating[T](work: Awaitable[T]) -> T:
    """Await ``work`` while heartbeating at a third of the activity's heartbeat timeout (if it has one)."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await work
    every = max(timeout / 3, timedelta(milliseconds=100)).total_seconds()

    # What the attempt last recorded is sent again (activities/beats.py): until it records
    # anything, what the previous attempt recorded (why its answer was rejected, how many were,
    # what they paid for), so an attempt that fails otherwise (a timeout) leaves it intact.
    with beats.holding() as held:

        async def beat() -> None:
            # The server times a step's heartbeat from its start: the first beat can wait an
            # interval, and the short steps (most store steps) end before sending one.
            while True:
                await asyncio.sleep(every)
                activity.heartbeat(*held.current())

        beater = asyncio.create_task(beat())
        try:
            return await work
        finally:
            beater.cancel()


def this_attempt() -> Retry:
    """Temporal's attempt number and what earlier attempts recorded: how many answers were rejected
    and why the last was. A retry after a rejection differs from the failed request; one after a
    provider failure is the same request (memory.llm.base.Retry)."""
    info = activity.info()
    details = info.heartbeat_details
    rejected = details[0] if details and isinstance(details[0], str) else None
    if len(details) >= 2 and isinstance(details[1], int):
        rejections: int | None = details[1]
    else:  # nothing recorded: no answer was rejected; only a reason: an older worker's record
        rejections = 0 if rejected is None else None
    return Retry(attempt=info.attempt, rejected=rejected, rejections=rejections)


def step_seconds() -> float | None:
    """This step's start-to-close timeout, as the workflow scheduled it (its input's retry
    settings, which a worker's own may differ from); None when it has none."""
    timeout = activity.info().start_to_close_timeout
    return None if timeout is None else timeout.total_seconds()


@contextmanager
def noting_rejection(*, deterministic: bool = False, paid: Paid | None = None) -> Iterator[None]:
    """Record why a model's output was rejected as the last heartbeat, where the next attempt
    reads it (best effort: the attempt number alone already changes the request), with what the
    step's attempts ``paid`` for so far (activities/paid.py).

    An output rejected the same way as the previous attempt's, or any from a ``deterministic``
    provider (its retry would answer the same), raises UnusableOutputError: not retryable, so the
    workflow splits the window or takes the step's fallback now instead of after backoffs."""
    try:
        yield
    except (InvalidModelOutputError, MalformedOutputError) as e:
        why = str(e)[:300]
        tracing.mark_rejected(e)  # on the activity's span: this attempt degrades
        if deterministic:
            raise UnusableOutputError(
                f"deterministic provider, no retry can change it: {why}"
            ) from e
        earlier = this_attempt()
        if why == earlier.rejected:
            raise UnusableOutputError(f"rejected the same way twice: {why}") from e
        beat(why, earlier.rejected_before + 1, [] if paid is None else paid.calls())
        if paid is not None:
            paid.noted = True
        raise


@contextmanager
def asking(paid: Paid, *, deterministic: bool) -> Iterator[None]:
    """Where an LLM step's attempt asks its model: errors classified for Temporal (errors.py),
    a rejected answer noted for the next attempt with what the attempts ``paid`` for."""
    with classified(), noting_rejection(deterministic=deterministic, paid=paid):
        yield


class _Heartbeating(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        return await heartbeating(self.next.execute_activity(input))


class HeartbeatInterceptor(Interceptor):
    """Every activity of the worker heartbeats while it runs, store steps included (their options
    set a heartbeat timeout of seconds): a killed worker costs seconds, not the step's timeout."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Heartbeating(next)
