"""Session reads of the PostgreSQL backend: an agent's view of a session, the cold-sessions scan,
the ends the cold job finishes, the purge, and the listings of the memory page."""

from __future__ import annotations

from datetime import datetime

from memory.directory import AgentUser
from memory.models import SessionInfo
from memory.store.postgres.codec import STATE_SQL
from memory.store.postgres.pool import Conn, fetch, fetch_one

# The WHERE term `pending_messages > 0` repeats the partial index's; the row comparison makes
# the page boundary part of the index range.
COLD_SESSIONS_SQL = (
    STATE_SQL
    + """
WHERE sa.pending_messages > 0
  AND sa.last_message_at <= %(idle_before)s
  AND (sa.pending_messages >= %(min_messages)s OR sa.pending_weighted_tokens >= %(min_tokens)s)
  AND (%(after_at)s::timestamptz IS NULL
       OR (sa.last_message_at, sa.session_id, sa.agent_id)
          > (%(after_at)s, %(after_session)s, %(after_agent)s))
ORDER BY sa.last_message_at, sa.session_id, sa.agent_id
LIMIT %(limit)s
"""
)

UNFINISHED_ENDED_SQL = """
SELECT u.session_id, u.agent_id FROM (
    SELECT session_id, agent_id FROM reflections
    WHERE scope = 'session' AND absorbed_into_version IS NULL
    UNION SELECT session_id, agent_id FROM session_agents WHERE pending_messages > 0
) AS u JOIN session_agents AS sa ON sa.session_id = u.session_id AND sa.agent_id = u.agent_id
WHERE sa.ended_at IS NOT NULL AND sa.ended_at <= %s AND (u.session_id, u.agent_id) > (%s, %s)
ORDER BY u.session_id, u.agent_id LIMIT %s
"""

# A session's activity: its last message, else its creation.
_ACTIVE = "coalesce(s.last_message_at, s.created_at)"

# The agent's own participants (isolation): a user who spoke in a shared session before this
# agent joined is another agent's business, not listed here.
USERS_SQL = f"""
SELECT su.user_id, count(*) AS sessions, max({_ACTIVE}) AS last_active_at
FROM session_agents AS sa
JOIN sessions AS s ON s.session_id = sa.session_id
JOIN session_agent_users AS su ON su.session_id = sa.session_id AND su.agent_id = sa.agent_id
WHERE sa.agent_id = %s
GROUP BY su.user_id
ORDER BY last_active_at DESC, su.user_id
LIMIT %s
"""

_SESSIONS_SQL = f"""
SELECT s.session_id FROM session_agents AS sa JOIN sessions AS s ON s.session_id = sa.session_id
WHERE sa.agent_id = %(agent_id)s
  AND (%(user_id)s::text IS NULL OR EXISTS (
      SELECT 1 FROM session_agent_users AS su
      WHERE su.session_id = s.session_id AND su.agent_id = %(agent_id)s
        AND su.user_id = %(user_id)s
  ))
ORDER BY {_ACTIVE} DESC, s.session_id
LIMIT %(limit)s
"""


async def _column(conn: Conn, sql: str, *params: object) -> tuple[str, ...]:
    return tuple(str(next(iter(row.values()))) for row in await fetch(conn, sql, params))


async def session_view(conn: Conn, session_id: str, agent_id: str | None) -> SessionInfo | None:
    row = await fetch_one(
        conn,
        "SELECT session_id, created_at, last_message_at FROM sessions WHERE session_id = %s",
        (session_id,),
    )
    if row is None:
        return None
    agents = await _column(
        conn, "SELECT agent_id FROM session_agents WHERE session_id = %s ORDER BY ord", session_id
    )
    if agent_id is None:
        users = await _column(
            conn, "SELECT user_id FROM session_users WHERE session_id = %s ORDER BY ord", session_id
        )
        return SessionInfo.model_validate({**row, "agent_ids": agents, "user_ids": users})
    mine = await fetch_one(
        conn,
        "SELECT ended_at FROM session_agents WHERE session_id = %s AND agent_id = %s",
        (session_id, agent_id),
    )
    if mine is None:
        return None
    users = await _column(
        conn,
        "SELECT user_id FROM session_agent_users WHERE session_id = %s AND agent_id = %s "
        "ORDER BY ord",
        session_id, agent_id,
    )  # fmt: skip
    return SessionInfo.model_validate(
        {**row, "agent_ids": agents, "user_ids": users, "ended_at": mine["ended_at"]}
    )


async def agent_sessions(
    conn: Conn, agent_id: str, user_id: str | None, limit: int
) -> list[SessionInfo]:
    rows = await fetch(
        conn, _SESSIONS_SQL, {"agent_id": agent_id, "user_id": user_id, "limit": limit}
    )
    views = [await session_view(conn, row["session_id"], agent_id) for row in rows]
    return [view for view in views if view is not None]  # the agent's view of each


async def agent_users(conn: Conn, agent_id: str, limit: int) -> list[AgentUser]:
    rows = await fetch(conn, USERS_SQL, (agent_id, limit))
    return [AgentUser.model_validate(row) for row in rows]


async def purge_ended(conn: Conn, ended_before: datetime, limit: int) -> list[str]:
    rows = await fetch(
        conn,
        "SELECT session_id, agent_id FROM session_agents "
        "WHERE ended_at IS NOT NULL AND NOT purged AND ended_at < %s "
        "ORDER BY ended_at, session_id, agent_id LIMIT %s",
        (ended_before, limit),
    )
    for row in rows:
        pair = (row["session_id"], row["agent_id"])
        for table in ("reflections", "consolidated"):
            await conn.execute(
                f"DELETE FROM {table} WHERE session_id = %s AND agent_id = %s "
                "AND scope = 'session'".encode(),
                pair,
            )
        await conn.execute(
            "UPDATE session_agents SET purged = true WHERE session_id = %s AND agent_id = %s", pair
        )
    return [str(row["session_id"]) for row in rows]
