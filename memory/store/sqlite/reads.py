"""The reads the planners' snapshots are assembled from (memory.store.snapshots), inside the
caller's transaction on the SQLite thread: blocking, so the assembly runs with run_sync."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import datetime

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
from memory.store.sqlite.lifecycle_reads import read_epochs
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

    async def pending_after(
        self, session_id: str, seq: int, *, except_user: str | None = None
    ) -> tuple[int, float]:
        row = self.conn.execute(
            "SELECT count(*), coalesce(sum(weighted_tokens), 0.0) FROM messages "
            "WHERE session_id = ? AND seq > ? AND (? IS NULL OR user_id IS NOT ?)",
            (session_id, seq, except_user, except_user),
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

    # ------------------------------------------------------------ the lifecycle snapshots' own

    async def stored_epoch(self, agent_key: str, user_id: str) -> int:
        sql = "SELECT epoch FROM erasures WHERE agent_key = ? AND user_id = ?"
        row = self.conn.execute(sql, (agent_key, user_id)).fetchone()
        return 0 if row is None else int(row[0])

    async def existing_agents(self, agent_ids: Sequence[str]) -> frozenset[str]:
        sql = "SELECT agent_id FROM agents WHERE agent_id IN"
        return frozenset(_column(self.conn, sql, agent_ids))

    async def existing_facts(self, fact_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(_column(self.conn, "SELECT fact_id FROM facts WHERE fact_id IN", fact_ids))

    async def valid_fact_keys(self, agent_id: str, hash_: str) -> set[tuple[str, str, str, str]]:
        rows = self.conn.execute(
            "SELECT agent_id, coalesce(user_id, ''), scope, hash FROM facts "
            "WHERE agent_id = ? AND hash = ? AND invalidated_at IS NULL",
            (agent_id, hash_),
        )
        return {(r[0], r[1], r[2], r[3]) for r in rows}

    async def blobs(self, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
        sql = "SELECT scope_key, content, version FROM consolidated WHERE scope_key IN"
        return {r[0]: (str(r[1]), int(r[2])) for r in rows_in(self.conn, sql, keys)}

    async def session_users(self, session_id: str) -> tuple[str, ...]:
        sql = "SELECT user_id FROM session_users WHERE session_id = ? ORDER BY rowid"
        return tuple(str(r[0]) for r in self.conn.execute(sql, (session_id,)))

    async def session_states(self, session_id: str) -> list[SessionAgentState]:
        sql = STATE_SQL + " WHERE sa.session_id = ? ORDER BY sa.rowid"
        return [state_from_row(r) for r in self.conn.execute(sql, (session_id,))]

    async def message_seqs(self, session_id: str, message_ids: Sequence[str]) -> dict[str, int]:
        sql = "SELECT message_id, seq FROM messages WHERE session_id = ? AND message_id IN"
        return {r[0]: int(r[1]) for r in rows_in(self.conn, sql, message_ids, session_id)}

    async def taken_seqs(self, session_id: str, seqs: Sequence[int]) -> frozenset[int]:
        sql = "SELECT seq FROM messages WHERE session_id = ? AND seq IN"
        return frozenset(int(r[0]) for r in rows_in(self.conn, sql, seqs, session_id))

    async def user_session_ids(self, user_id: str, agent_id: str) -> list[str]:
        rows = self.conn.execute(
            "SELECT su.session_id FROM session_users AS su JOIN session_agents AS sa "
            "ON sa.session_id = su.session_id WHERE su.user_id = ? AND sa.agent_id = ?",
            (user_id, agent_id),
        )
        return [str(r[0]) for r in rows]

    async def message_counts(self, session_id: str, user_id: str) -> tuple[int, int]:
        row = self.conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE user_id = ?) FROM messages WHERE session_id = ?",
            (user_id, session_id),
        ).fetchone()
        return int(row[0]), int(row[1])

    async def user_facts(self, agent_id: str, user_id: str) -> list[Fact]:
        sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE agent_id = ? AND user_id = ?"
        return [fact_from_row(row) for row in self.conn.execute(sql, (agent_id, user_id))]

    async def reflection_count(self, key: str) -> int:
        sql = "SELECT count(*) FROM reflections WHERE scope_key = ?"
        return int(self.conn.execute(sql, (key,)).fetchone()[0])

    async def has_blob(self, key: str) -> bool:
        sql = "SELECT 1 FROM consolidated WHERE scope_key = ?"
        return self.conn.execute(sql, (key,)).fetchone() is not None

    async def cached_text_hashes(self, text_hashes: Sequence[str]) -> frozenset[str]:
        sql = "SELECT text_hash FROM embedding_cache WHERE text_hash IN"
        return frozenset(_column(self.conn, sql, text_hashes))

    async def contents_elsewhere(
        self, agent_id: str, user_id: str, content_hashes: Sequence[str]
    ) -> list[str]:
        sql = (
            "SELECT content FROM facts WHERE NOT (agent_id = ? AND coalesce(user_id, '') = ?) "
            "AND hash IN"
        )
        return [str(r[0]) for r in rows_in(self.conn, sql, content_hashes, agent_id, user_id)]


def read_snapshot_tx[S](conn: sqlite3.Connection, request: Request[S]) -> S:
    """The snapshot a planner asks for, read on the connection's thread."""
    return run_sync(read_snapshot(SQLiteReads(conn), request))
