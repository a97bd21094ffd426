"""Models from stored records (SQLite rows, MongoDB documents), for both backends: a model's
fields taken by name, the timestamps through the backend's own conversion."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from memory.models import ScopeKey

_TIMES = frozenset(
    {"created_at", "last_message_at", "ended_at", "formed_at", "updated_at", "invalidated_at"}
    | {"last_accessed_at", "said_at"}
)


def from_record[M: BaseModel](
    model: type[M], record: Mapping[str, Any], to_time: Callable[[Any], datetime], **fields: Any
) -> M:
    """``model`` from the record's fields of the same names (absent ones take their defaults),
    its timestamps converted by ``to_time``; ``fields`` are given as they are."""
    data = {
        name: record[name] for name in model.model_fields if name in record and name not in fields
    }
    for name in _TIMES.intersection(data):
        if data[name] is not None:
            data[name] = to_time(data[name])
    return model.model_validate({**data, **fields})


def scope_key_of(record: Mapping[str, Any]) -> ScopeKey:
    """The scope key stored as the record's scope/agent_id/user_id/session_id fields."""
    return from_record(ScopeKey, record, datetime.fromisoformat)
