"""The SQLite backend's listings for operators and the memory page: an agent's users and
sessions, and the API keys (their writes are planned: memory.store.rules.keys)."""

from __future__ import annotations

import sqlite3

from memory.api_keys import ApiKey
from memory.directory import AgentUser
from memory.models import SessionInfo
from memory.store.records import from_record
from memory.store.sqlite.codec import from_us, to_us
from memory.store.sqlite.sessions import session_view
from memory.store.sqlite.thread import SQLiteThread

# A session's activity: its last message, else its creation.
_ACTIVE = "coalesce(s.last_message_at, s.created_at)"

# The agent's own participants (isolation): a user who spoke in a shared session before this agent
# joined is another agent's business, not listed here.
_USERS_SQL = f"""
SELECT su.user_id, count(*) AS sessions, max({_ACTIVE}) AS last_active_at
FROM session_agents AS sa
JOIN sessions AS s ON s.session_id = sa.session_id
JOIN session_agent_users AS su ON su.session_id = sa.session_id AND su.agent_id = sa.agent_id
WHERE sa.agent_id = ?
GROUP BY su.user_id
ORDER BY last_active_at DESC, su.user_id
LIMIT ?
"""

_SESSIONS_SQL = f"""
SELECT s.* FROM session_agents AS sa JOIN sessions AS s ON s.session_id = sa.session_id
WHERE sa.agent_id = :agent_id
  AND (:user_id IS NULL OR EXISTS (
      SELECT 1 FROM session_agent_users AS su
      WHERE su.session_id = s.session_id AND su.agent_id = :agent_id AND su.user_id = :user_id
  ))
ORDER BY {_ACTIVE} DESC, s.session_id
LIMIT :limit
"""


def session_info(conn: sqlite3.Connection, row: sqlite3.Row) -> SessionInfo:
    """A ``sessions`` row with its agents and users, in join order (rowid order)."""
    session_id = row["session_id"]
    members = {
        table: tuple(
            r[0]
            for r in conn.execute(
                f"SELECT {column} FROM {table} WHERE session_id = ? ORDER BY rowid", (session_id,)
            )
        )
        for table, column in (("session_agents", "agent_id"), ("session_users", "user_id"))
    }
    return from_record(
        SessionInfo, dict(row), from_us, agent_ids=members["session_agents"],
        user_ids=members["session_users"],
    )  # fmt: skip


def api_key_params(key: ApiKey) -> tuple[str, str, int]:
    return key.key_id, key.model_dump_json(), to_us(key.created_at)


def api_key(conn: sqlite3.Connection, key_id: str) -> ApiKey | None:
    row = conn.execute("SELECT record FROM api_keys WHERE key_id = ?", (key_id,)).fetchone()
    return None if row is None else ApiKey.model_validate_json(row[0])


class SQLiteListings(SQLiteThread):
    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        rows = await self._rows(_USERS_SQL, (agent_id, max(limit, 0)))
        return [
            AgentUser(
                user_id=row["user_id"],
                sessions=row["sessions"],
                last_active_at=from_us(row["last_active_at"]),
            )
            for row in rows
        ]

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        params = {"agent_id": agent_id, "user_id": user_id, "limit": max(limit, 0)}

        def load(conn: sqlite3.Connection) -> list[SessionInfo]:
            rows = conn.execute(_SESSIONS_SQL, params).fetchall()
            views = [session_view(conn, row["session_id"], agent_id) for row in rows]
            return [view for view in views if view is not None]  # the agent's view of each

        return await self._read(load)

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return await self._read(lambda conn: api_key(conn, key_id))

    async def list_api_keys(self) -> list[ApiKey]:
        rows = await self._rows("SELECT record FROM api_keys ORDER BY created_at, key_id")
        return [ApiKey.model_validate_json(row[0]) for row in rows]
