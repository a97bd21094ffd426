"""The data-lifecycle snapshots of the SQLite backend (imports, forget_user, erasure epochs,
export), read inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.rules import erasure as er
from memory.store.sqlite.codec import (
    FACT_COLUMNS,
    consolidated_from_row,
    fact_from_row,
    from_blob,
    message_from_row,
    reflection_from_row,
)

ERASURES_DDL = """
-- One row per (agent or '*', user) ever forgotten: the epoch formations check at commit, and
-- what was deleted (counts only, no content).
CREATE TABLE IF NOT EXISTS erasures (
    agent_key    TEXT NOT NULL,
    user_id      TEXT NOT NULL,
    epoch        INTEGER NOT NULL,
    forgotten_at INTEGER NOT NULL,
    counts       TEXT NOT NULL,
    PRIMARY KEY (agent_key, user_id)
) WITHOUT ROWID;
"""


def read_epochs(conn: sqlite3.Connection, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
    """Each user's effective epoch for the agent: its own row plus the all-agents one."""
    sql = "SELECT user_id, sum(epoch) FROM erasures WHERE agent_key IN (?, ?) AND user_id IN"
    found = {row[0]: int(row[1]) for row in _grouped(conn, sql, user_ids, agent_id)}
    return {user: found.get(user, 0) for user in user_ids}


def _grouped(
    conn: sqlite3.Connection, sql: str, users: Sequence[str], agent_id: str
) -> list[sqlite3.Row]:
    rows: list[sqlite3.Row] = []
    for start in range(0, len(users), 400):
        chunk = list(dict.fromkeys(users[start : start + 400]))
        marks = ", ".join("?" * len(chunk))
        rows += conn.execute(
            f"{sql} ({marks}) GROUP BY user_id", (agent_id, er.ALL_AGENTS, *chunk)
        ).fetchall()
    return rows


def user_agents(conn: sqlite3.Connection, user_id: str) -> list[str]:
    rows = conn.execute(
        "SELECT agent_id FROM facts WHERE user_id = ? UNION "
        "SELECT agent_id FROM reflections WHERE user_id = ? UNION "
        "SELECT agent_id FROM consolidated WHERE user_id = ? UNION "
        "SELECT sa.agent_id FROM session_agents AS sa JOIN session_users AS su "
        "ON su.session_id = sa.session_id WHERE su.user_id = ? ORDER BY 1",
        (user_id,) * 4,
    )
    return [r[0] for r in rows]


def export_data(
    conn: sqlite3.Connection, *, agent_id: str | None, user_id: str | None, messages: bool
) -> ExportData:
    def where(extra: str = "", *, user_column: str = "user_id") -> tuple[str, list[object]]:
        terms, params = ["1 = 1"], list[object]()
        if agent_id is not None:
            terms.append("agent_id = ?")
            params.append(agent_id)
        if user_id is not None:
            terms.append(f"{user_column} = ?")
            params.append(user_id)
        return " AND ".join(terms) + extra, params

    agents_sql = "SELECT config FROM agents" + (" WHERE agent_id = ?" if agent_id else "")
    agents = conn.execute(agents_sql + " ORDER BY agent_id", (agent_id,) if agent_id else ())
    w, p = where()
    facts = conn.execute(f"SELECT {FACT_COLUMNS}, embedding FROM facts WHERE {w} ORDER BY rowid", p)
    reflections = conn.execute(f"SELECT * FROM reflections WHERE {w} ORDER BY formed_at, rowid", p)
    blobs = conn.execute(f"SELECT * FROM consolidated WHERE {w} ORDER BY scope_key", p)
    data = ExportData(
        agents=[AgentConfig.model_validate_json(r[0]) for r in agents],
        facts=[(fact_from_row(r), [float(x) for x in from_blob(r["embedding"])]) for r in facts],
        reflections=[reflection_from_row(r) for r in reflections],
        consolidated=[consolidated_from_row(r) for r in blobs],
    )
    if messages:
        terms, params = [], list[object]()
        if agent_id is not None:
            terms.append("session_id IN (SELECT session_id FROM session_agents WHERE agent_id = ?)")
            params.append(agent_id)
        if user_id is not None:
            terms.append("session_id IN (SELECT session_id FROM session_users WHERE user_id = ?)")
            params.append(user_id)
        sql = "SELECT * FROM messages" + (" WHERE " + " AND ".join(terms) if terms else "")
        data.messages = [
            message_from_row(r) for r in conn.execute(sql + " ORDER BY session_id, seq", params)
        ]
    return data
