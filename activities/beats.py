"""The heartbeat details an attempt last sent, which every beater of the attempt repeats.

A beater (activities/heartbeat.py ``heartbeating``) sends the details again at each interval, and
Temporal keeps only the last heartbeat an attempt sent: the next attempt reads it. A beater that
repeated what the attempt started with would overwrite what the attempt recorded since (why an
answer was rejected, what was paid for: activities/paid.py) whenever it beat after it. So an
attempt's details live in one holder, shared by its beaters, and ``send`` updates it."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from temporalio import activity

_held: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "mnemos_heartbeat_details", default=None
)


@contextmanager
def holding() -> Iterator[list[Any]]:
    """The attempt's details holder: the one already held in this context, else a new one
    holding what the previous attempt sent (its record goes on until this attempt writes its
    own)."""
    held = _held.get()
    if held is not None:
        yield held
        return
    held = list(activity.info().heartbeat_details)
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


def send(*details: Any) -> None:
    """Heartbeat ``details`` now, and have the attempt's beaters repeat them from now on."""
    held = _held.get()
    if held is not None:
        held[:] = details
    activity.heartbeat(*details)
