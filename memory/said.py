"""When a fact (or a version of it) was said, on its speaker's clock.

A fact keeps ``said_at`` as the UTC instant (the stores select and sort by it) and, beside it,
the UTC offset its latest source message was sent with (``said_utc_offset_minutes``; None: UTC,
or stored before it was kept). The day shown beside a fact is that clock's day: "I am flying to
Paris tomorrow" said at 22:30 -05:00 on 7 May is stored as "... on 8 May 2024" (memory.dates
counts in the speaker's calendar) and was said on 7 May; shown in UTC, the 8th, the trip would
seem to be the day it was said.

Between extraction and the commit the offset rides inside the timestamp (NewFact.said_at,
FactAdd.said_at: "2024-05-07T22:30:00-05:00"), not in a field of its own: a worker of the
previous version, during a rolling upgrade, reads that timestamp as the same instant (a field it
does not know its payload converter would drop), and what it commits keeps the offset where its
store writes the timestamp as given (PostgreSQL's body, read back by postgres.codec). ``split``
takes it apart where a version is stored (memory.store.rules.versions, memory.lifecycle.records)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.dates import in_offset, offset_minutes


def split(at: datetime | None) -> tuple[datetime | None, int | None]:
    """A said time as stored: its instant in UTC and its offset in minutes (None for UTC, as
    for a message stored before offsets were kept: both are read as UTC)."""
    if at is None:
        return None, None
    return at.astimezone(UTC), offset_minutes(at) or None


def said_time(at: datetime, minutes: int | None) -> str:
    """The said time for people: "2024-05-07 22:30 UTC-05:00" on the speaker's clock; in UTC
    without a suffix, as a fact stored before offsets were kept always showed."""
    shown = in_offset(at, minutes)
    return f"{shown:%Y-%m-%d %H:%M}" + (f" UTC{shown:%:z}" if minutes else "")
