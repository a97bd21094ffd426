"""Session queries of the SQLite backend: the cold-sessions scan and the purge of ended ones."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.store.sqlite.codec import STATE_SQL, to_us

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
