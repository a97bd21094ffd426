"""How SQLite stores values: timestamps as integer microseconds, vectors as float32 BLOBs
(memory.store.records.vector_bytes), lists as JSON text; the rows are decoded by memory.store.sqlite.db.SQLiteDb."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from memory.errors import InvalidInputError
from memory.models import FactRevision
from memory.store.records import stored_history

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(value: datetime) -> int:
    """A timezone-aware datetime as integer microseconds since the epoch (exact, sortable)."""
    if value.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware (UTC)")
    return (value - _EPOCH) // _MICROSECOND


def from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def history_to_json(history: tuple[FactRevision, ...]) -> str:
    return json.dumps(stored_history(history, datetime.isoformat))
