"""The data-lifecycle snapshots (imports, forget_user, erasure epochs) and the export, read inside
the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence

from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.postgres.codec import (
    FACT_SELECT,
    consolidated_from_row,
    fact_from_row,
    message_from_row,
    reflection_from_row,
    vector_list,
)
from memory.store.postgres.pool import Conn, fetch
from memory.store.rules import erasure as er


async def read_epochs(conn: Conn, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
    """Each user's effective epoch for the agent: its own row plus the all-agents one."""
    rows = await fetch(
        conn,
        "SELECT user_id, sum(epoch) AS epoch FROM erasures WHERE agent_key IN (%s, %s) "
        "AND user_id = ANY(%s) GROUP BY user_id",
        (agent_id, er.ALL_AGENTS, list(user_ids)),
    )
    found = {row["user_id"]: int(row["epoch"]) for row in rows}
    return {user: found.get(user, 0) for user in user_ids}


async def buffered_counts(conn: Conn, keys: Sequence[str]) -> dict[str, int]:
    """Unabsorbed reflections per scope key (0 for a key without any)."""
    rows = await fetch(
        conn,
        "SELECT scope_key, count(*) AS n FROM reflections WHERE scope_key = ANY(%s) "
        "AND absorbed_into_version IS NULL GROUP BY scope_key",
        (list(keys),),
    )
    return {key: 0 for key in keys} | {row["scope_key"]: int(row["n"]) for row in rows}


async def user_agents(conn: Conn, user_id: str) -> list[str]:
    rows = await fetch(
        conn,
        "SELECT agent_id FROM facts WHERE user_id = %s UNION "
        "SELECT agent_id FROM reflections WHERE user_id = %s UNION "
        "SELECT agent_id FROM consolidated WHERE user_id = %s UNION "
        "SELECT sa.agent_id FROM session_agents AS sa JOIN session_users AS su "
        "ON su.session_id = sa.session_id WHERE su.user_id = %s ORDER BY 1",
        (user_id,) * 4,
    )
    return [row["agent_id"] for row in rows]


async def export_data(
    conn: Conn, *, agent_id: str | None, user_id: str | None, messages: bool
) -> ExportData:
    terms, params = ["true"], list[object]()
    if agent_id is not None:
        terms.append("agent_id = %s")
        params.append(agent_id)
    if user_id is not None:
        terms.append("user_id = %s")
        params.append(user_id)
    w = " AND ".join(terms)
    agents = await fetch(
        conn, "SELECT config FROM agents WHERE %s::text IS NULL OR agent_id = %s ORDER BY agent_id",
        (agent_id, agent_id),
    )  # fmt: skip
    facts = await fetch(
        conn, f"SELECT {FACT_SELECT}, f.embedding FROM facts AS f WHERE {w} ORDER BY ord", params
    )
    reflections = await fetch(
        conn, f"SELECT * FROM reflections WHERE {w} ORDER BY formed_at, ord", params
    )
    blobs = await fetch(conn, f"SELECT body FROM consolidated WHERE {w} ORDER BY scope_key", params)
    data = ExportData(
        agents=[AgentConfig.model_validate(r["config"]) for r in agents],
        facts=[(fact_from_row(r), vector_list(r["embedding"])) for r in facts],
        reflections=[reflection_from_row(r) for r in reflections],
        consolidated=[consolidated_from_row(r) for r in blobs],
    )
    if messages:
        rows = await fetch(
            conn,
            "SELECT * FROM messages WHERE (%(agent)s::text IS NULL OR session_id IN "
            "(SELECT session_id FROM session_agents WHERE agent_id = %(agent)s)) "
            "AND (%(user)s::text IS NULL OR session_id IN "
            "(SELECT session_id FROM session_users WHERE user_id = %(user)s)) "
            "ORDER BY session_id, seq",
            {"agent": agent_id, "user": user_id},
        )
        data.messages = [message_from_row(r) for r in rows]
    return data
