"""Session queries of the SQLite backend: the cold-sessions scan and the purge of ended ones."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.models import SessionAgentState
from memory.store.sqlite.codec import STATE_SQL, state_from_row, to_us

# The WHERE term `pending_messages > 0` repeats the partial index's, which lets SQLite use it;
# the row value comparison makes the page boundary part of the index range.
COLD_SESSIONS_SQL = (
    STATE_SQL
    + """
WHERE sa.pending_messages > 0
  AND sa.last_message_at <= :idle_before
  AND (sa.pending_messages >= :min_messages OR sa.pending_weighted_tokens >= :min_tokens)
  AND (sa.last_message_at, sa.session_id, sa.agent_id) > (:after_at, :after_session, :after_agent)
ORDER BY sa.last_message_at, sa.session_id, sa.agent_id
LIMIT :limit
"""
)

# Below every stored timestamp: the first page starts at the beginning of the index.
_BEFORE_ALL = -(2**63)


def list_cold_sessions_q(
    conn: sqlite3.Connection,
    idle_before: datetime,
    min_messages: int,
    min_weighted_tokens: float,
    after: tuple[datetime, str, str] | None,
    limit: int,
) -> list[SessionAgentState]:
    after_at, after_session, after_agent = (
        (_BEFORE_ALL, "", "") if after is None else (to_us(after[0]), after[1], after[2])
    )
    rows = conn.execute(
        COLD_SESSIONS_SQL,
        {
            "idle_before": to_us(idle_before),
            "min_messages": min_messages,
            "min_tokens": min_weighted_tokens,
            "after_at": after_at,
            "after_session": after_session,
            "after_agent": after_agent,
            "limit": limit,
        },
    ).fetchall()
    return [state_from_row(row) for row in rows]


def purge_ended_sessions_tx(
    conn: sqlite3.Connection, ended_before: datetime, limit: int
) -> list[str]:
    ids = [
        str(row[0])
        for row in conn.execute(
            "SELECT session_id FROM sessions "
            "WHERE ended_at IS NOT NULL AND NOT purged AND ended_at < ? "
            "ORDER BY ended_at, session_id LIMIT ?",
            (to_us(ended_before), limit),
        )
    ]
    for session_id in ids:
        conn.execute(
            "DELETE FROM reflections WHERE session_id = ? AND scope = 'session'", (session_id,)
        )
        conn.execute(
            "DELETE FROM consolidated WHERE session_id = ? AND scope = 'session'", (session_id,)
        )
        conn.execute("UPDATE sessions SET purged = 1 WHERE session_id = ?", (session_id,))
    return ids
