"""The snapshots the planners ask for, read inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import cast

from memory.models import Fact, FormationCommitResult, Reflection, SessionAgentState
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
from memory.store.sqlite.lifecycle_reads import lifecycle_snapshot, read_epochs
from memory.store.sqlite.listings import api_key
from memory.store.sqlite.meta import read_embedding_meta, rows_in
from memory.store.sqlite.reembed import count_pending_reembeds
from memory.store.sqlite.search import facts_by_id


def read_state(
    conn: sqlite3.Connection, session_id: str, agent_id: str
) -> SessionAgentState | None:
    row = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?", (session_id, agent_id)
    ).fetchone()
    return None if row is None else state_from_row(row)


def facts_with_hashes(conn: sqlite3.Connection, agent_id: str, hashes: Sequence[str]) -> list[Fact]:
    """The agent's facts, valid or not, whose content hash is one of ``hashes``."""
    sql = f"SELECT {FACT_COLUMNS} FROM facts WHERE agent_id = ? AND hash IN"
    return [fact_from_row(row) for row in rows_in(conn, sql, hashes, agent_id)]


def pending_after(conn: sqlite3.Connection, session_id: str, seq: int) -> tuple[int, float]:
    row = conn.execute(
        "SELECT count(*), coalesce(sum(weighted_tokens), 0.0) FROM messages "
        "WHERE session_id = ? AND seq > ?",
        (session_id, seq),
    ).fetchone()
    return int(row[0]), float(row[1])


def _existing(conn: sqlite3.Connection, sql: str, ids: Sequence[str], *first: object) -> set[str]:
    """The values of ``ids`` that ``sql`` (ending in an IN list, first column the value) finds."""
    return {str(row[0]) for row in rows_in(conn, sql, ids, *first)}


def formation_snapshot(conn: sqlite3.Connection, req: FormationRequest) -> FormationSnapshot:
    done = conn.execute(
        "SELECT result FROM formation_commits WHERE formation_id = ?", (req.formation_id,)
    ).fetchone()
    facts = {f.fact_id: f for f in facts_by_id(conn, req.fact_ids)}
    facts |= {f.fact_id: f for f in facts_with_hashes(conn, req.agent_id, req.hashes)}
    existing = _existing(
        conn, "SELECT reflection_id FROM reflections WHERE reflection_id IN", req.reflection_ids
    )
    count = "SELECT count(*) FROM reflections WHERE scope_key = ? AND absorbed_into_version IS NULL"
    buffered = {key: int(conn.execute(count, (key,)).fetchone()[0]) for key in req.scope_keys}
    recent: list[tuple[Fact, Sequence[float]]] = []
    if req.recent_since is not None:
        rows = conn.execute(
            f"SELECT {FACT_COLUMNS}, embedding FROM facts "
            "WHERE agent_id = ? AND invalidated_at IS NULL AND updated_at >= ?",
            (req.agent_id, to_us(req.recent_since)),
        )
        recent = [(fact_from_row(row), from_blob(row["embedding"]).tolist()) for row in rows]
    texts: set[tuple[str, str]] = set()
    for key in req.scope_keys if req.reflection_texts else ():
        sql = "SELECT content FROM reflections WHERE scope_key = ? AND content IN"
        texts |= {
            reflection_text_key(key, row[0])
            for row in rows_in(conn, sql, req.reflection_texts, key)
        }
    return FormationSnapshot(
        done=None if done is None else FormationCommitResult.model_validate_json(done[0]),
        state=read_state(conn, req.session_id, req.agent_id),
        embedding_meta=read_embedding_meta(conn),
        facts=list(facts.values()),
        existing_reflections=frozenset(existing),
        buffered=buffered,
        pending_after=pending_after(conn, req.session_id, req.new_cursor),
        participants=frozenset(
            str(row[0])
            for row in conn.execute(
                "SELECT user_id FROM session_agent_users WHERE session_id = ? AND agent_id = ?",
                (req.session_id, req.agent_id),
            )
        ),
        epochs=read_epochs(conn, req.agent_id, req.users),
        recent=recent,
        reflection_texts=frozenset(texts),
    )


def record_snapshot(conn: sqlite3.Connection, req: RecordRequest) -> RecordSnapshot:
    session_id = req.session_id
    session = conn.execute(
        "SELECT last_seq, last_message_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    state = read_state(conn, session_id, req.agent_id)
    stored = _existing(
        conn,
        "SELECT message_id FROM messages WHERE session_id = ? AND message_id IN",
        req.message_ids,
        session_id,
    )
    return RecordSnapshot(
        session_exists=session is not None,
        last_seq=0 if session is None else int(session["last_seq"]),
        last_message_at=None if session is None else opt_from_us(session["last_message_at"]),
        state=state,
        stored_ids=frozenset(stored),
    )


def reflection(conn: sqlite3.Connection, reflection_id: str) -> Reflection | None:
    row = conn.execute(
        "SELECT * FROM reflections WHERE reflection_id = ?", (reflection_id,)
    ).fetchone()
    return None if row is None else reflection_from_row(row)


def read_snapshot[S](conn: sqlite3.Connection, request: Request[S]) -> S:
    """The snapshot a planner asks for (see memory.store.rules)."""
    snapshot: object
    match request:
        case FormationRequest():
            snapshot = formation_snapshot(conn, request)
        case RecordRequest():
            snapshot = record_snapshot(conn, request)
        case ReflectionRequest(reflection_id=reflection_id):
            snapshot = reflection(conn, reflection_id)
        case FactRequest(fact_id=fact_id, content_hash=hash_):
            fact = next(iter(facts_by_id(conn, [fact_id])), None)
            same = (
                []
                if fact is None or hash_ is None
                else facts_with_hashes(conn, fact.agent_id, [hash_])
            )
            snapshot = FactSnapshot(fact, same, read_embedding_meta(conn))
        case ConsolidationRequest(key=key, reflection_ids=ids):
            row = conn.execute(
                "SELECT version FROM consolidated WHERE scope_key = ?", (key,)
            ).fetchone()
            buffered = _existing(
                conn,
                "SELECT reflection_id FROM reflections WHERE scope_key = ? "
                "AND absorbed_into_version IS NULL AND reflection_id IN",
                ids,
                key,
            )
            snapshot = ConsolidationSnapshot(0 if row is None else int(row[0]), len(buffered))
        case ApiKeyRequest(key_id=key_id):
            snapshot = api_key(conn, key_id)
        case SwitchRequest(model=model):
            snapshot = count_pending_reembeds(conn, model)
        case _:
            snapshot = lifecycle_snapshot(conn, request)
    return cast(S, snapshot)
