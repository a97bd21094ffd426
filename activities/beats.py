"""The heartbeat details an attempt last sent, which every beater of the attempt repeats.

A beater (activities/heartbeat.py ``heartbeating``) sends the details again at each interval, and
Temporal keeps only the last heartbeat an attempt sent: the next attempt reads it, and a step
that timed out hands it to the workflow. A beater that repeated what the attempt started with
would overwrite what the attempt recorded since (why an answer was rejected: ``send``), and one
that repeated only what was recorded would leave out the answers the attempt paid for since
(activities/paid.py): an attempt that then timed out would lose them. So an attempt's details
live in one holder, shared by its beaters, which beat what it holds with what was paid so far."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from temporalio import activity

from memory.pipeline.usage import HEARTBEAT_USAGE, Encoded


def head(details: Sequence[Any]) -> list[Any]:
    """The values of heartbeat ``details`` before the usage, as older workers read them: why the
    last answer was rejected, and how many were (None: an older worker's record, uncounted)."""
    values = list(details[:HEARTBEAT_USAGE])
    if not values:
        return [None, 0]
    return values if len(values) == HEARTBEAT_USAGE else [values[0], None]


class Held:
    """An attempt's heartbeat details, and what it has paid for so far (``paid``, encoded; set
    by activities.paid.paying)."""

    def __init__(self, details: Sequence[Any]) -> None:
        self.details = list(details)
        self.paid: Callable[[], Encoded] | None = None

    def current(self) -> list[Any]:
        """What a beat sends: the details last sent, their usage what was paid so far."""
        calls = self.paid() if self.paid is not None else []
        return [*head(self.details), calls] if calls else self.details


_held: contextvars.ContextVar[Held | None] = contextvars.ContextVar(
    "mnemos_heartbeat_details", default=None
)


@contextmanager
def holding() -> Iterator[Held]:
    """The attempt's holder: the one already held in this context, else a new one holding what
    the previous attempt sent (its record goes on until this attempt writes its own)."""
    held = _held.get()
    if held is not None:
        yield held
        return
    held = Held(activity.info().heartbeat_details)
    token = _held.set(held)
    try:
        yield held
    finally:
        _held.reset(token)


def send(*details: Any) -> None:
    """Heartbeat ``details`` now, and have the attempt's beaters repeat them from now on."""
    held = _held.get()
    if held is not None:
        held.details = list(details)
    activity.heartbeat(*details)
