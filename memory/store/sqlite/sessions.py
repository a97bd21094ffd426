"""Session queries of the SQLite backend: an agent's view of a session, the cold-sessions scan and
the purge of ended (session, agent) memory."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memory.models import SessionInfo
from memory.store.records import from_record
from memory.store.sqlite.codec import STATE_SQL, from_us, to_us

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


def _column(conn: sqlite3.Connection, sql: str, *params: object) -> tuple[str, ...]:
    return tuple(str(row[0]) for row in conn.execute(sql, params))


def session_view(
    conn: sqlite3.Connection, session_id: str, agent_id: str | None
) -> SessionInfo | None:
    row = conn.execute(
        "SELECT session_id, created_at, last_message_at FROM sessions WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    agents = _column(
        conn, "SELECT agent_id FROM session_agents WHERE session_id = ? ORDER BY rowid", session_id
    )
    if agent_id is None:
        users = _column(
            conn,
            "SELECT user_id FROM session_users WHERE session_id = ? ORDER BY rowid",
            session_id,
        )
        return from_record(SessionInfo, dict(row), from_us, agent_ids=agents, user_ids=users)
    mine = conn.execute(
        "SELECT ended_at FROM session_agents WHERE session_id = ? AND agent_id = ?",
        (session_id, agent_id),
    ).fetchone()
    if mine is None:
        return None
    users = _column(
        conn,
        "SELECT user_id FROM session_agent_users WHERE session_id = ? AND agent_id = ? "
        "ORDER BY rowid",
        session_id,
        agent_id,
    )
    ended = None if mine[0] is None else from_us(mine[0])
    return from_record(
        SessionInfo, dict(row), from_us, agent_ids=agents, user_ids=users, ended_at=ended
    )


def purge_ended_sessions_tx(
    conn: sqlite3.Connection, ended_before: datetime, limit: int
) -> list[str]:
    rows = conn.execute(
        "SELECT session_id, agent_id FROM session_agents "
        "WHERE ended_at IS NOT NULL AND NOT purged AND ended_at < ? "
        "ORDER BY ended_at, session_id, agent_id LIMIT ?",
        (to_us(ended_before), limit),
    ).fetchall()
    for session_id, agent_id in rows:
        for table in ("reflections", "consolidated"):
            conn.execute(
                f"DELETE FROM {table} WHERE session_id = ? AND agent_id = ? AND scope = 'session'",
                (session_id, agent_id),
            )
        conn.execute(
            "UPDATE session_agents SET purged = 1 WHERE session_id = ? AND agent_id = ?",
            (session_id, agent_id),
        )
    return [str(row[0]) for row in rows]
