"""Models from stored records (SQL rows, MongoDB documents) and back, for every backend: a model's
fields taken by name, the timestamps through the backend's own conversion; a session as one
agent sees it; a fact's history and vectors as stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import cache, partial
from types import UnionType
from typing import Annotated, Any, TypeAliasType, Union, cast, get_args, get_origin

import numpy as np
from pydantic import BaseModel

from memory import switch_marks
from memory.dates import in_offset
from memory.models import FactRevision, ScopeKey, SessionAgentState, SessionInfo
from memory.said import split
from memory.store.base_lifecycle import Vector
from memory.store.rules.withheld import parsed

_TIMES = frozenset(
    {"created_at", "last_message_at", "ended_at", "formed_at", "updated_at", "invalidated_at"}
    | {"last_accessed_at", "said_at", "degraded_at", "reformed_at", "said_from"}
)


def known[M: BaseModel](model: type[M], data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``data`` that ``model`` has, in the models it holds too (a session state
    in a formation's result, a revision in a fact's history): a record a newer version wrote
    (a field added since) reads as this version knows it, not refused, while both run during a
    roll. Only for what a store read: what users send stays refused with a field it lacks."""
    readers = _readers(model)
    return {
        name: value if (read := readers[name]) is None else read(value)
        for name, value in data.items()
        if name in readers
    }


type _Read = Callable[[Any], Any]


@cache
def _readers(model: type[BaseModel]) -> dict[str, _Read | None]:
    """Each field's reader (None: the value as it is, no model inside), worked out once per
    model: every fact a search or a context reads on PostgreSQL goes through ``known``, and
    walking the annotations of a fact's fields at each row made a vector search of 20 facts
    take 1.7 times as long as before known() existed."""
    return {name: _reader(field.annotation) for name, field in model.model_fields.items()}


def _reader(annotation: Any) -> _Read | None:
    """How a value of ``annotation`` is read, a model's unknown fields left out, through
    ``X | None``, ``Annotated``, type aliases, lists, tuples and dict values; as it is where the
    annotation is a union of several types (which one the value is, validation tells) or holds
    no model."""
    if isinstance(annotation, TypeAliasType):
        return _reader(annotation.__value__)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _reader(args[0])
    if origin in (Union, UnionType):
        kinds = [a for a in args if a is not type(None)]
        return _reader(kinds[0]) if len(kinds) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        # Looked up at read time: a model may hold itself.
        return partial(_model_value, annotation)
    if origin in (list, tuple, set, frozenset) and args:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            each = [_reader(a) for a in args]
            if all(r is None for r in each):
                return None
            return partial(_positional, each)
        return None if (item := _reader(args[0])) is None else partial(_items, item)
    if origin in (dict, Mapping) and len(args) == 2:
        return None if (item := _reader(args[1])) is None else partial(_values, item)
    return None


def _model_value(model: type[BaseModel], value: Any) -> Any:
    return known(model, value) if isinstance(value, Mapping) else value


def _positional(readers: list[_Read | None], value: Any) -> Any:
    if not isinstance(value, list | tuple):
        return value
    return [v if r is None else r(v) for r, v in zip(readers, value, strict=False)]


def _items(read: _Read, value: Any) -> Any:
    return [read(v) for v in value] if isinstance(value, list | tuple) else value


def _values(read: _Read, value: Any) -> Any:
    return {k: read(v) for k, v in value.items()} if isinstance(value, Mapping) else value


def blob_said_from(
    record: Mapping[str, Any], to_time: Callable[[Any], datetime]
) -> datetime | None:
    """A blob's said_from as its columns keep it (SQLite, PostgreSQL): with the version it was
    written for. A process of the previous version consolidates without knowing the columns: it
    leaves them, and its blob, which may hold something said before them, does not know where it
    begins (None)."""
    said_from = record.get("said_from")
    if said_from is None or record.get("said_from_version") != record.get("version"):
        return None
    return to_time(said_from)


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


def session_of(
    record: Mapping[str, Any],
    to_time: Callable[[Any], datetime],
    everyone: Sequence[str],
    mine: tuple[Any, Sequence[str]] | None = None,
    **fields: Any,
) -> SessionInfo:
    """A session from its record and its users (``everyone``, in join order); with ``mine``, an
    agent's stored end and participants, that agent's view (isolation): its own users and its
    own end, the session's users beside them (``session_user_ids``)."""
    if mine is None:
        return from_record(SessionInfo, record, to_time, user_ids=everyone, ended_at=None, **fields)
    ended_at, users = mine
    return from_record(
        SessionInfo, record, to_time, user_ids=users, session_user_ids=everyone,
        ended_at=None if ended_at is None else to_time(ended_at), **fields,
    )  # fmt: skip


def state_of(record: Mapping[str, Any], to_time: Callable[[Any], datetime]) -> SessionAgentState:
    """A (session, agent) state from its stored fields."""
    # Sums of floats (increments, recomputations) can drift a hair below zero; the model
    # forbids < 0.
    tokens = max(0.0, float(record["pending_weighted_tokens"]))
    withheld = parsed(record.get("withheld"))  # none stored (older rows): nothing withheld
    # None stored (older rows): no marks, no open stretch.
    marks, recorded_under = switch_marks.parsed(record.get("switch_marks"))
    return from_record(
        SessionAgentState, record, to_time, pending_weighted_tokens=tokens, withheld=withheld,
        switch_marks=marks, recorded_under=recorded_under,
    )  # fmt: skip


def to_record(
    model: BaseModel, to_stored: Callable[[datetime], Any], **options: Any
) -> dict[str, Any]:
    """The model's fields as a record, the inverse of ``from_record``: every timestamp, nested
    ones too, through ``to_stored``, sequences as lists; ``options`` are model_dump's (include,
    exclude)."""
    return cast(dict[str, Any], _stored(model.model_dump(**options), to_stored))


def _stored(value: Any, to_stored: Callable[[datetime], Any]) -> Any:
    if isinstance(value, datetime):
        return to_stored(value)
    if isinstance(value, dict):
        return {name: _stored(item, to_stored) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stored(item, to_stored) for item in value]
    return value


def stored_history(
    history: Sequence[FactRevision], to_stored: Callable[[datetime], Any]
) -> list[dict[str, Any]]:
    """A fact's history as every backend stores it: each revision's said_at written on its
    speaker's clock ("2024-05-07T22:30:00-05:00"), the offset inside it rather than a field of its
    own, since a process of the previous version reads these revisions during a rolling upgrade
    and FactRevision forbids unknown fields: it reads the same instant. ``history_of`` reverses
    it."""
    stored = []
    for rev in history:
        record = to_record(rev, to_stored, exclude={"said_utc_offset_minutes"})
        if rev.said_at is not None and rev.said_utc_offset_minutes:
            record["said_at"] = in_offset(rev.said_at, rev.said_utc_offset_minutes).isoformat()
        stored.append(record)
    return stored


def history_of(stored: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The revisions of ``stored_history`` (or stored before it: their said_at in UTC), each
    said_at back in UTC and its offset a field again (None for UTC)."""
    revisions = []
    for record in stored:
        said = record.get("said_at")
        if isinstance(said, str):
            said = datetime.fromisoformat(said)
        said_at, offset = split(said)
        revisions.append(
            {**known(FactRevision, record), "said_at": said_at, "said_utc_offset_minutes": offset}
        )
    return revisions


def vector_bytes(vector: Vector | Sequence[float]) -> bytes:
    """A vector stored as bytes: float32 little-endian, exact, and a quarter of an array of
    doubles."""
    return np.asarray(vector, dtype="<f4").reshape(-1).tobytes()


def vector_of_bytes(data: bytes) -> Vector:
    # A copy, so the array is writable and does not pin the row's buffer.
    return np.frombuffer(data, dtype="<f4").astype(np.float32)
