"""The data-lifecycle snapshots (imports, forget_user, erasure epochs) and the export, read inside
the caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memory.ids import text_hash
from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.postgres.codec import (
    FACT_SELECT,
    STATE_SQL,
    consolidated_from_row,
    fact_from_row,
    message_from_row,
    reflection_from_row,
    state_from_row,
    vector_list,
)
from memory.store.postgres.pool import Conn, embedding_meta, fetch, fetch_one
from memory.store.rules import Request
from memory.store.rules import erasure as er
from memory.store.rules import imports as ri


async def _ids(conn: Conn, sql: str, *params: object) -> frozenset[str]:
    return frozenset(str(next(iter(row.values()))) for row in await fetch(conn, sql, params))


async def _stored_epoch(conn: Conn, agent_key: str, user_id: str) -> int:
    row = await fetch_one(
        conn, "SELECT epoch FROM erasures WHERE agent_key = %s AND user_id = %s",
        (agent_key, user_id),
    )  # fmt: skip
    return 0 if row is None else int(row["epoch"])


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


async def _pair_epochs(conn: Conn, pairs: Iterable[ri.Pair]) -> dict[ri.Pair, int]:
    return {
        (agent_id, user): epoch
        for agent_id, users in ri.users_by_agent(pairs).items()
        for user, epoch in (await read_epochs(conn, agent_id, users)).items()
    }


async def buffered_counts(conn: Conn, keys: Sequence[str]) -> dict[str, int]:
    """Unabsorbed reflections per scope key (0 for a key without any)."""
    rows = await fetch(
        conn,
        "SELECT scope_key, count(*) AS n FROM reflections WHERE scope_key = ANY(%s) "
        "AND absorbed_into_version IS NULL GROUP BY scope_key",
        (list(keys),),
    )
    return {key: 0 for key in keys} | {row["scope_key"]: int(row["n"]) for row in rows}


async def _pending(conn: Conn, sql: str, *params: object) -> tuple[int, float]:
    row = await fetch_one(
        conn, f"SELECT count(*) AS n, coalesce(sum(weighted_tokens), 0.0) AS w {sql}", params
    )
    assert row is not None
    return int(row["n"]), float(row["w"])


async def _fact_snapshot(conn: Conn, req: ri.FactImportRequest) -> ri.FactImportSnapshot:
    existing = await _ids(
        conn, "SELECT fact_id FROM facts WHERE fact_id = ANY(%s)", list(req.fact_ids)
    )
    valid: set[tuple[str, str, str, str]] = set()
    for agent_id, hash_ in req.hashes:
        rows = await fetch(
            conn,
            "SELECT agent_id, coalesce(user_id, '') AS u, scope, hash FROM facts "
            "WHERE agent_id = %s AND hash = %s AND invalidated_at IS NULL",
            (agent_id, hash_),
        )
        valid |= {(r["agent_id"], r["u"], r["scope"], r["hash"]) for r in rows}
    return ri.FactImportSnapshot(
        existing, frozenset(valid), await embedding_meta(conn), await _pair_epochs(conn, req.pairs)
    )


async def _users(conn: Conn, session_id: str) -> tuple[str, ...]:
    rows = await fetch(
        conn, "SELECT user_id FROM session_users WHERE session_id = %s ORDER BY ord", (session_id,)
    )
    return tuple(row["user_id"] for row in rows)


async def _session_snapshot(conn: Conn, req: ri.SessionImportRequest) -> ri.SessionImportSnapshot:
    sid = req.session_id
    head = await fetch_one(
        conn, "SELECT last_seq, last_message_at FROM sessions WHERE session_id = %s", (sid,)
    )
    states = [state_from_row(row) for row in await fetch(
        conn, STATE_SQL + " WHERE sa.session_id = %s", (sid,)
    )]  # fmt: skip
    stored = await fetch(
        conn, "SELECT message_id, seq FROM messages WHERE session_id = %s AND message_id = ANY(%s)",
        (sid, list(req.message_ids)),
    )  # fmt: skip
    taken = await fetch(
        conn, "SELECT seq FROM messages WHERE session_id = %s AND seq = ANY(%s)",
        (sid, list(req.seqs)),
    )  # fmt: skip
    return ri.SessionImportSnapshot(
        exists=head is not None,
        last_seq=0 if head is None else int(head["last_seq"]),
        last_message_at=None if head is None else head["last_message_at"],
        user_ids=await _users(conn, sid),
        states={s.agent_id: s for s in states},
        stored={r["message_id"]: int(r["seq"]) for r in stored},
        taken=frozenset(int(r["seq"]) for r in taken),
        pending_after_max=await _pending(
            conn, "FROM messages WHERE session_id = %s AND seq > %s", sid, req.max_seq
        ),
        epochs=await _pair_epochs(conn, req.pairs),
    )


async def _user_sessions(conn: Conn, req: er.ForgetRequest) -> list[er.UserSession]:
    sids = await fetch(
        conn,
        "SELECT su.session_id FROM session_users AS su JOIN session_agents AS sa "
        "ON sa.session_id = su.session_id WHERE su.user_id = %s AND sa.agent_id = %s",
        (req.user_id, req.agent_id),
    )
    sessions = []
    for sid in (row["session_id"] for row in sids):
        states = [state_from_row(row) for row in await fetch(
            conn, STATE_SQL + " WHERE sa.session_id = %s ORDER BY sa.ord", (sid,)
        )]  # fmt: skip
        counts = await fetch_one(
            conn,
            "SELECT count(*) AS n, count(*) FILTER (WHERE user_id = %s) AS mine FROM messages "
            "WHERE session_id = %s",
            (req.user_id, sid),
        )
        assert counts is not None
        pending = []
        for state in states:
            n, w = await _pending(
                conn,
                "FROM messages WHERE session_id = %s AND seq > %s AND user_id IS DISTINCT FROM %s",
                sid, state.cursor_seq, req.user_id,
            )  # fmt: skip
            pending.append((state, n, w))
        sessions.append(
            er.UserSession(
                session_id=sid,
                user_ids=await _users(conn, sid),
                agent_ids=tuple(s.agent_id for s in states),
                messages=int(counts["n"]),
                user_messages=int(counts["mine"]),
                states=tuple(pending),
            )
        )
    return sessions


async def _forget_snapshot(conn: Conn, req: er.ForgetRequest) -> er.ForgetSnapshot:
    rows = await fetch(
        conn, f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.agent_id = %s AND f.user_id = %s",
        (req.agent_id, req.user_id),
    )  # fmt: skip
    facts = [fact_from_row(row) for row in rows]
    key = f"user:{req.agent_id}:{req.user_id}"
    reflections = await fetch_one(
        conn, "SELECT count(*) AS n FROM reflections WHERE scope_key = %s", (key,)
    )
    blob = await fetch_one(conn, "SELECT 1 AS one FROM consolidated WHERE scope_key = %s", (key,))
    text_hashes, content_hashes = er.cache_candidates(facts)
    cached = await _ids(
        conn, "SELECT DISTINCT text_hash FROM embedding_cache WHERE text_hash = ANY(%s)",
        list(text_hashes),
    )  # fmt: skip
    # Texts another fact (any agent, any user) still holds as its content keep their entry.
    others = await fetch(
        conn,
        "SELECT body->>'content' AS content FROM facts WHERE NOT (agent_id = %s AND "
        "coalesce(user_id, '') = %s) AND hash = ANY(%s)",
        (req.agent_id, req.user_id, list(content_hashes)),
    )
    in_use = {text_hash(row["content"]) for row in others}
    return er.ForgetSnapshot(
        epoch=await _stored_epoch(conn, req.agent_id, req.user_id),
        facts=facts,
        reflections=0 if reflections is None else int(reflections["n"]),
        blob=blob is not None,
        sessions=await _user_sessions(conn, req),
        cached=cached,
        in_use=frozenset(in_use) & cached,
    )


async def lifecycle_snapshot(conn: Conn, request: Request[object]) -> object:
    match request:
        case ri.AgentsRequest(agent_ids=ids):
            return await _ids(
                conn, "SELECT agent_id FROM agents WHERE agent_id = ANY(%s)", list(ids)
            )
        case ri.FactImportRequest():
            return await _fact_snapshot(conn, request)
        case ri.BlobImportRequest(keys=keys, pairs=pairs):
            rows = await fetch(
                conn,
                "SELECT scope_key, body->>'content' AS content, version FROM consolidated "
                "WHERE scope_key = ANY(%s)",
                (list(keys),),
            )
            stored = {r["scope_key"]: (str(r["content"]), int(r["version"])) for r in rows}
            return ri.BlobImportSnapshot(stored, await _pair_epochs(conn, pairs))
        case ri.ReflectionImportRequest(reflection_ids=ids, keys=keys, pairs=pairs):
            existing = await _ids(
                conn, "SELECT reflection_id FROM reflections WHERE reflection_id = ANY(%s)",
                list(ids),
            )  # fmt: skip
            return ri.ReflectionImportSnapshot(
                existing, await buffered_counts(conn, keys), await _pair_epochs(conn, pairs)
            )
        case ri.SessionImportRequest():
            return await _session_snapshot(conn, request)
        case er.ForgetRequest():
            return await _forget_snapshot(conn, request)
        case er.EraseAllRequest(user_id=user_id):
            return await _stored_epoch(conn, er.ALL_AGENTS, user_id)
        case _:
            raise TypeError(f"no snapshot for {request!r}")


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
