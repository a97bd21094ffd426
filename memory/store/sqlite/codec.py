"""Conversions between SQLite rows and the domain models of memory.models."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import numpy as np

from memory.errors import InvalidInputError
from memory.models import (
    ConsolidatedMemory,
    Fact,
    FactRevision,
    Reflection,
    ScopeKey,
    SessionAgentState,
    StoredMessage,
)
from memory.store.base import Vector

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(value: datetime) -> int:
    """A timezone-aware datetime as integer microseconds since the epoch (exact, sortable)."""
    if value.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware (UTC)")
    return (value - _EPOCH) // _MICROSECOND


def from_us(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def opt_from_us(value: int | None) -> datetime | None:
    return None if value is None else from_us(value)


def to_blob(vector: Vector | list[float]) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> Vector:
    # A copy, so the array is writable and does not pin the row's buffer.
    return np.frombuffer(blob, dtype=np.float32).copy()


def history_to_json(history: tuple[FactRevision, ...]) -> str:
    return json.dumps([rev.model_dump(mode="json") for rev in history])


_FACT_FIELDS = (
    "fact_id", "agent_id", "user_id", "scope", "content", "hash", "embedding_model",
    "source_session_id", "formed_at", "updated_at", "version", "previous_content", "history",
    "invalidated_at", "invalidated_by", "access_count", "last_accessed_at",
)  # fmt: skip


def fact_columns(alias: str = "") -> str:
    """The select list that fact_from_row reads, optionally qualified by a table alias."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + name for name in _FACT_FIELDS)


FACT_COLUMNS = fact_columns()


def fact_from_row(row: sqlite3.Row) -> Fact:
    """A row selected with fact_columns() (any extra columns are ignored)."""
    return Fact(
        fact_id=row["fact_id"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        scope=row["scope"],
        content=row["content"],
        hash=row["hash"],
        embedding_model=row["embedding_model"],
        source_session_id=row["source_session_id"],
        formed_at=from_us(row["formed_at"]),
        updated_at=from_us(row["updated_at"]),
        version=row["version"],
        previous_content=row["previous_content"],
        history=tuple(FactRevision.model_validate(rev) for rev in json.loads(row["history"])),
        invalidated_at=opt_from_us(row["invalidated_at"]),
        invalidated_by=row["invalidated_by"],
        access_count=row["access_count"],
        last_accessed_at=opt_from_us(row["last_accessed_at"]),
    )


STATE_SQL = """
SELECT sa.session_id, sa.agent_id, sa.cursor_seq, s.last_seq, sa.pending_messages,
       sa.pending_weighted_tokens, sa.last_message_at, sa.formations
FROM session_agents AS sa JOIN sessions AS s ON s.session_id = sa.session_id
"""


def state_from_row(row: sqlite3.Row) -> SessionAgentState:
    """A row selected by STATE_SQL (or the same columns)."""
    return SessionAgentState(
        session_id=row["session_id"],
        agent_id=row["agent_id"],
        cursor_seq=row["cursor_seq"],
        last_seq=row["last_seq"],
        pending_messages=row["pending_messages"],
        # Sums of floats may drift a hair below zero after a recomputation; the model forbids < 0.
        pending_weighted_tokens=max(0.0, row["pending_weighted_tokens"]),
        last_message_at=opt_from_us(row["last_message_at"]),
        formations=row["formations"],
    )


def message_from_row(row: sqlite3.Row) -> StoredMessage:
    return StoredMessage(
        session_id=row["session_id"],
        seq=row["seq"],
        message_id=row["message_id"],
        role=row["role"],
        content=row["content"],
        created_at=from_us(row["created_at"]),
        user_id=row["user_id"],
        name=row["name"],
        agent_id=row["agent_id"],
    )


def _scope_key(row: sqlite3.Row) -> ScopeKey:
    return ScopeKey(
        scope=row["scope"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        session_id=row["session_id"],
    )


def reflection_from_row(row: sqlite3.Row) -> Reflection:
    return Reflection(
        reflection_id=row["reflection_id"],
        scope_key=_scope_key(row),
        content=row["content"],
        source_session_id=row["source_session_id"],
        formed_at=from_us(row["formed_at"]),
        absorbed_into_version=row["absorbed_into_version"],
    )


def consolidated_from_row(row: sqlite3.Row) -> ConsolidatedMemory:
    return ConsolidatedMemory(
        scope_key=_scope_key(row),
        content=row["content"],
        version=row["version"],
        word_limit=row["word_limit"],
        updated_at=from_us(row["updated_at"]),
        edited_by=row["edited_by"],
    )


def reflection_params(r: Reflection) -> tuple[object, ...]:
    """The values of a reflections row, in the DDL's column order (absorbed: NULL)."""
    key = r.scope_key
    return (
        r.reflection_id, key.key, key.scope, key.agent_id, key.user_id, key.session_id,
        r.content, r.source_session_id, to_us(r.formed_at),
    )  # fmt: skip


def message_params(m: StoredMessage, weighted_tokens: float) -> tuple[object, ...]:
    """The values of a messages row, in the DDL's column order."""
    return (
        m.session_id, m.seq, m.message_id, m.role, m.content, to_us(m.created_at), m.user_id,
        m.name, m.agent_id, weighted_tokens,
    )  # fmt: skip
