"""The reads the planners' snapshots are assembled from (memory.store.snapshots), inside the
caller's transaction on the SQLite thread: blocking, so the assembly runs with run_sync."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.api_keys import ApiKey
from memory.models import Fact, FormationCommitResult, Reflection, SessionAgentState
from memory.store.rules import Request
from memory.store.rules.recheck import reflection_text_key
from memory.store.snapshots import SnapshotReads, read_snapshot, run_sync
from memory.store.sqlite.codec import (
    FACT_COLUMNS,
    STATE_SQL,
    fact_from_row,
    from_blob,
    opt_from_us,
    reflection_from_row,
    state_from_row,
    to_us,
)
from memory.store.sqlite.lifecycle_reads import lifecycle_snapshot, read_epochs
from memory.store.sqlite.listings import api_key
from memory.store.sqlite.meta import read_embedding_meta, rows_in
from memory.store.sqlite.reembed import count_pending_reembeds
from memory.store.sqlite.search import facts_by_id

_BUFFERED = "SELECT count(*) FROM reflections WHERE scope_key = ? AND absorbed_into_version IS NULL"


def read_state(
    conn: sqlite3.Connection, session_id: str, agent_id: str
) -> SessionAgentState | None:
    row = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?", (session_id, agent_id)
    ).fetchone()
    return None if row is None else state_from_row(row)


def reflection(conn: sqlite3.Connection, reflection_id: str) -> Reflection | None:
    row = conn.execute(
        "SELECT * FROM reflections WHERE reflection_id = ?", (reflection_id,)
    ).fetchone()
    return None if row is None else reflection_from_row(row)


def _column(conn: sqlite3.Connection, sql: str, ids: Sequence[str], *first: object) -> set[str]:
    """The values of ``ids`` that ``sql`` (ending in an IN list, first column the value) finds."""
    return {str(row[0]) for row in rows_in(conn, sql, ids, *first)}


class SQLiteReads(SnapshotReads):
    # Coroutines that never suspend: each answers at once from the blocking connection.

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def state(self, session_id: str, agent_id: str) -> SessionAgentState | None:
        return read_state(self.conn, session_id, agent_id)

    async def facts_by_id(self, fact_ids: Sequence[str]) -> list[Fact]:
        return facts_by_id(self.conn, fact_ids)

    async def facts_with_hashes(self, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
        sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE agent_id = ? AND hash IN"
        return [fact_from_row(row) for row in rows_in(self.conn, sql, hashes, agent_id)]

    async def embedding_meta(self) -> tuple[str, int] | None:
        return read_embedding_meta(self.conn)

    async def formation_done(self, formation_id: str) -> FormationCommitResult | None:
        row = self.conn.execute(
            "SELECT result FROM formation_commits WHERE formation_id = ?", (formation_id,)
        ).fetchone()
        return None if row is None else FormationCommitResult.model_validate_json(row[0])

    async def existing_reflections(self, reflection_ids: Sequence[str]) -> frozenset[str]:
        sql = "SELECT reflection_id FROM reflections WHERE reflection_id IN"
        return frozenset(_column(self.conn, sql, reflection_ids))

    async def buffered_counts(self, keys: Sequence[str]) -> dict[str, int]:
        return {key: int(self.conn.execute(_BUFFERED, (key,)).fetchone()[0]) for key in keys}

    async def pending_after(self, session_id: str, seq: int) -> tuple[int, float]:
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(weighted_tokens), 0.0) FROM messages "
            "WHERE session_id = ? AND seq > ?",
            (session_id, seq),
        ).fetchone()
        return int(row[0]), float(row[1])

    async def participants(self, session_id: str, agent_id: str) -> frozenset[str]:
        rows = self.conn.execute(
            "SELECT user_id FROM session_agent_users WHERE session_id = ? AND agent_id = ?",
            (session_id, agent_id),
        )
        return frozenset(str(row[0]) for row in rows)

    async def epochs(self, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        return read_epochs(self.conn, agent_id, user_ids)

    async def valid_since(
        self, agent_id: str, since: datetime
    ) -> list[tuple[Fact, Sequence[float]]]:
        rows = self.conn.execute(
            f"SELECT {FACT_COLUMNS}, embedding FROM facts "
            "WHERE agent_id = ? AND invalidated_at IS NULL AND updated_at >= ?",
            (agent_id, to_us(since)),
        )
        return [(fact_from_row(row), from_blob(row["embedding"]).tolist()) for row in rows]

    async def reflection_texts(
        self, keys: Sequence[str], texts: Sequence[str]
    ) -> frozenset[tuple[str, str]]:
        sql = "SELECT content FROM reflections WHERE scope_key = ? AND content IN"
        return frozenset(
            reflection_text_key(key, row[0])
            for key in keys
            for row in rows_in(self.conn, sql, texts, key)
        )

    async def session_head(self, session_id: str) -> tuple[int, datetime | None] | None:
        row = self.conn.execute(
            "SELECT last_seq, last_message_at FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return None if row is None else (int(row["last_seq"]), opt_from_us(row["last_message_at"]))

    async def stored_message_ids(
        self, session_id: str, message_ids: Sequence[str]
    ) -> frozenset[str]:
        sql = "SELECT message_id FROM messages WHERE session_id = ? AND message_id IN"
        return frozenset(_column(self.conn, sql, message_ids, session_id))

    async def reflection(self, reflection_id: str) -> Reflection | None:
        return reflection(self.conn, reflection_id)

    async def blob_version(self, key: str) -> int:
        sql = "SELECT version FROM consolidated WHERE scope_key = ?"
        row = self.conn.execute(sql, (key,)).fetchone()
        return 0 if row is None else int(row[0])

    async def buffered_among(self, key: str, reflection_ids: Sequence[str]) -> int:
        sql = (
            "SELECT reflection_id FROM reflections WHERE scope_key = ? "
            "AND absorbed_into_version IS NULL AND reflection_id IN"
        )
        return len(_column(self.conn, sql, reflection_ids, key))

    async def api_key(self, key_id: str) -> ApiKey | None:
        return api_key(self.conn, key_id)

    async def reembed_pending(self, model: str) -> tuple[int, int]:
        return count_pending_reembeds(self.conn, model)

    async def lifecycle(self, request: Request[Any]) -> object:
        return lifecycle_snapshot(self.conn, request)


def read_snapshot_tx[S](conn: sqlite3.Connection, request: Request[S]) -> S:
    """The snapshot a planner asks for, read on the connection's thread."""
    return run_sync(read_snapshot(SQLiteReads(conn), request))
