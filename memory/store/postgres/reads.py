"""The snapshots the planners ask for (memory.store.rules), read inside the caller's transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from memory.api_keys import ApiKey
from memory.models import Fact, FormationCommitResult, Reflection, SessionAgentState
from memory.store.postgres.codec import (
    FACT_SELECT,
    STATE_SQL,
    fact_from_row,
    reflection_from_row,
    state_from_row,
    vector_list,
)
from memory.store.postgres.lifecycle_reads import buffered_counts, lifecycle_snapshot, read_epochs
from memory.store.postgres.pool import Conn, embedding_meta, fetch, fetch_one
from memory.store.postgres.reembed import count_pending_reembeds
from memory.store.rules import (
    ApiKeyRequest,
    ConsolidationRequest,
    ConsolidationSnapshot,
    FactRequest,
    FactSnapshot,
    FormationRequest,
    FormationSnapshot,
    RecordRequest,
    RecordSnapshot,
    ReflectionRequest,
    Request,
)
from memory.store.rules.recheck import reflection_text_key
from memory.store.rules.reembed import SwitchRequest


async def read_state(conn: Conn, session_id: str, agent_id: str) -> SessionAgentState | None:
    row = await fetch_one(
        conn, STATE_SQL + " WHERE sa.session_id = %s AND sa.agent_id = %s", (session_id, agent_id)
    )
    return None if row is None else state_from_row(row)


async def facts_by_id(conn: Conn, ids: Sequence[str]) -> list[Fact]:
    """The facts that exist among ``ids``, in the order asked."""
    rows = await fetch(
        conn, f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.fact_id = ANY(%s)", (list(ids),)
    )
    found = {fact.fact_id: fact for fact in map(fact_from_row, rows)}
    return [found[fid] for fid in ids if fid in found]


async def facts_with_hashes(conn: Conn, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
    """The agent's facts, valid or not, whose content hash is one of ``hashes``."""
    rows = await fetch(
        conn,
        f"SELECT {FACT_SELECT} FROM facts AS f WHERE f.agent_id = %s AND f.hash = ANY(%s)",
        (agent_id, list(hashes)),
    )
    return [fact_from_row(row) for row in rows]


async def pending_after(conn: Conn, session_id: str, seq: int) -> tuple[int, float]:
    row = await fetch_one(
        conn,
        "SELECT count(*) AS n, coalesce(sum(weighted_tokens), 0.0) AS w FROM messages "
        "WHERE session_id = %s AND seq > %s",
        (session_id, seq),
    )
    assert row is not None
    return int(row["n"]), float(row["w"])


async def column(conn: Conn, sql: str, *params: object) -> list[str]:
    """The first column of a query's rows, as strings."""
    return [str(next(iter(row.values()))) for row in await fetch(conn, sql, params)]


async def formation_snapshot(conn: Conn, req: FormationRequest) -> FormationSnapshot:
    done = await fetch_one(
        conn, "SELECT result FROM formation_commits WHERE formation_id = %s", (req.formation_id,)
    )
    facts = {f.fact_id: f for f in await facts_by_id(conn, req.fact_ids)}
    facts |= {f.fact_id: f for f in await facts_with_hashes(conn, req.agent_id, req.hashes)}
    existing = await column(
        conn, "SELECT reflection_id FROM reflections WHERE reflection_id = ANY(%s)",
        list(req.reflection_ids),
    )  # fmt: skip
    recent: list[tuple[Fact, Sequence[float]]] = []
    if req.recent_since is not None:
        rows = await fetch(
            conn,
            f"SELECT {FACT_SELECT}, f.embedding FROM facts AS f WHERE f.agent_id = %s "
            "AND f.invalidated_at IS NULL AND f.updated_at >= %s",
            (req.agent_id, req.recent_since),
        )
        recent = [(fact_from_row(row), vector_list(row["embedding"])) for row in rows]
    texts: set[tuple[str, str]] = set()
    if req.reflection_texts:
        rows = await fetch(
            conn,
            "SELECT scope_key, body->>'content' AS content FROM reflections "
            "WHERE scope_key = ANY(%s) AND body->>'content' = ANY(%s)",
            (list(req.scope_keys), list(req.reflection_texts)),
        )
        texts = {reflection_text_key(row["scope_key"], row["content"]) for row in rows}
    participants = await column(
        conn, "SELECT user_id FROM session_agent_users WHERE session_id = %s AND agent_id = %s",
        req.session_id, req.agent_id,
    )  # fmt: skip
    return FormationSnapshot(
        done=None if done is None else FormationCommitResult.model_validate(done["result"]),
        state=await read_state(conn, req.session_id, req.agent_id),
        embedding_meta=await embedding_meta(conn),
        facts=list(facts.values()),
        existing_reflections=frozenset(existing),
        buffered=await buffered_counts(conn, req.scope_keys),
        pending_after=await pending_after(conn, req.session_id, req.new_cursor),
        participants=frozenset(participants),
        epochs=await read_epochs(conn, req.agent_id, req.users),
        recent=recent,
        reflection_texts=frozenset(texts),
    )


async def record_snapshot(conn: Conn, req: RecordRequest) -> RecordSnapshot:
    session = await fetch_one(
        conn, "SELECT last_seq, last_message_at FROM sessions WHERE session_id = %s",
        (req.session_id,),
    )  # fmt: skip
    stored = await column(
        conn, "SELECT message_id FROM messages WHERE session_id = %s AND message_id = ANY(%s)",
        req.session_id, list(req.message_ids),
    )  # fmt: skip
    return RecordSnapshot(
        session_exists=session is not None,
        last_seq=0 if session is None else int(session["last_seq"]),
        last_message_at=None if session is None else session["last_message_at"],
        state=await read_state(conn, req.session_id, req.agent_id),
        stored_ids=frozenset(stored),
    )


async def reflection(conn: Conn, reflection_id: str) -> Reflection | None:
    row = await fetch_one(
        conn, "SELECT * FROM reflections WHERE reflection_id = %s", (reflection_id,)
    )
    return None if row is None else reflection_from_row(row)


async def api_key(conn: Conn, key_id: str) -> ApiKey | None:
    row = await fetch_one(conn, "SELECT record FROM api_keys WHERE key_id = %s", (key_id,))
    return None if row is None else ApiKey.model_validate(row["record"])


async def read_snapshot[S](conn: Conn, request: Request[S]) -> S:
    """The snapshot a planner asks for (see memory.store.rules)."""
    snapshot: object
    match request:
        case FormationRequest():
            snapshot = await formation_snapshot(conn, request)
        case RecordRequest():
            snapshot = await record_snapshot(conn, request)
        case ReflectionRequest(reflection_id=reflection_id):
            snapshot = await reflection(conn, reflection_id)
        case FactRequest(fact_id=fact_id, content_hash=hash_):
            fact = next(iter(await facts_by_id(conn, [fact_id])), None)
            same = (
                []
                if fact is None or hash_ is None
                else await facts_with_hashes(conn, fact.agent_id, [hash_])
            )
            snapshot = FactSnapshot(fact, same, await embedding_meta(conn))
        case ConsolidationRequest(key=key, reflection_ids=ids):
            row = await fetch_one(
                conn, "SELECT version FROM consolidated WHERE scope_key = %s", (key,)
            )
            buffered = await column(
                conn,
                "SELECT reflection_id FROM reflections WHERE scope_key = %s "
                "AND absorbed_into_version IS NULL AND reflection_id = ANY(%s)",
                key, list(ids),
            )  # fmt: skip
            snapshot = ConsolidationSnapshot(
                0 if row is None else int(row["version"]), len(buffered)
            )
        case ApiKeyRequest(key_id=key_id):
            snapshot = await api_key(conn, key_id)
        case SwitchRequest(model=model):
            snapshot = await count_pending_reembeds(conn, model)
        case _:
            snapshot = await lifecycle_snapshot(conn, request)
    return cast(S, snapshot)
