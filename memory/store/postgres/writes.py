"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) as SQL, inside the
caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from psycopg.types.json import Jsonb

from memory.store.postgres.codec import (
    INSERT_REFLECTION,
    UPSERT_ACCESS,
    fact_body,
    message_params,
    reflection_params,
    terms_of,
    vector_param,
)
from memory.store.postgres.pool import Conn, bump_version
from memory.store.postgres.reembed import swap_side_vectors
from memory.store.postgres.schema import hnsw_index_sql
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w

_INSERT_FACT = """
INSERT INTO facts (fact_id, agent_id, user_id, scope, hash, said_at, updated_at,
    invalidated_at, embedding, embedding_model, terms, body)
VALUES (%(fact_id)s, %(agent_id)s, %(user_id)s, %(scope)s, %(hash)s, %(said_at)s, %(updated_at)s,
    %(invalidated_at)s, %(embedding)s, %(embedding_model)s, array_to_tsvector(%(terms)s), %(body)s)
"""
_UPDATE_FACT = """
UPDATE facts SET hash = %(hash)s, said_at = %(said_at)s, updated_at = %(updated_at)s,
    invalidated_at = %(invalidated_at)s, embedding = coalesce(%(embedding)s, embedding),
    embedding_model = %(embedding_model)s, terms = array_to_tsvector(%(terms)s), body = %(body)s
WHERE fact_id = %(fact_id)s
"""


def _fact_params(put: w.PutFact) -> dict[str, object]:
    fact = put.fact
    return {
        **fact.model_dump(include={"fact_id", "agent_id", "user_id", "scope", "hash"}),
        "said_at": fact.said_at,
        "updated_at": fact.updated_at,
        "invalidated_at": fact.invalidated_at,
        "embedding": None if put.embedding is None else vector_param(put.embedding),
        "embedding_model": fact.embedding_model,
        "terms": terms_of(fact.content),
        "body": fact_body(fact),
    }


async def apply_writes(conn: Conn, writes: Iterable[w.Write]) -> None:
    # Runs of new facts go as one executemany (one round trip in psycopg's pipeline mode):
    # a formation or an import of many facts is not a round trip per fact.
    new_facts: list[dict[str, object]] = []
    for write in writes:
        if isinstance(write, w.PutFact) and write.new:
            new_facts.append(_fact_params(write))
            continue
        if new_facts:
            await conn.cursor().executemany(_INSERT_FACT, new_facts)
            new_facts = []
        await _apply(conn, write)
    if new_facts:
        await conn.cursor().executemany(_INSERT_FACT, new_facts)


async def _apply(conn: Conn, write: w.Write) -> None:
    cur = conn.cursor()
    match write:
        case w.PutFact():
            await conn.execute(_INSERT_FACT if write.new else _UPDATE_FACT, _fact_params(write))
        case w.SwapSideVectors(model=model, dimension=dimension):
            await swap_side_vectors(conn, model, dimension)
        case w.SetEmbeddingMeta(model=model, dimension=dimension):
            await cur.executemany(
                "INSERT INTO meta (key, value) VALUES (%s, %s)",
                [("embedding_model", model), ("embedding_dimension", str(dimension))],
            )
            await conn.execute(hnsw_index_sql(dimension).encode())
        case w.InsertReflections(reflections=reflections):
            await cur.executemany(INSERT_REFLECTION, [reflection_params(r) for r in reflections])
        case w.MoveCursor(state=s):
            await conn.execute(
                "UPDATE session_agents SET cursor_seq = %s, formations = %s, "
                "pending_messages = %s, pending_weighted_tokens = %s "
                "WHERE session_id = %s AND agent_id = %s",
                (
                    s.cursor_seq, s.formations, s.pending_messages,
                    s.pending_weighted_tokens, s.session_id, s.agent_id,
                ),
            )  # fmt: skip
        case w.BumpScopeVersions(keys=keys):
            for key in keys:
                await bump_version(conn, key)
        case w.RecordFormation(result=result, committed_at=committed_at):
            await conn.execute(
                "INSERT INTO formation_commits (formation_id, committed_at, result) "
                "VALUES (%s, %s, %s)",
                (result.formation_id, committed_at, Jsonb(result.model_dump(mode="json"))),
            )
        case w.CreateSession(session_id=session_id, created_at=created_at):
            await conn.execute(
                "INSERT INTO sessions (session_id, created_at) VALUES (%s, %s)",
                (session_id, created_at),
            )
        case w.AddSessionAgent(state=s):
            await conn.execute(
                "INSERT INTO session_agents (session_id, agent_id, cursor_seq, pending_messages, "
                "pending_weighted_tokens, last_message_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    s.session_id, s.agent_id, s.cursor_seq, s.pending_messages,
                    s.pending_weighted_tokens, s.last_message_at,
                ),
            )  # fmt: skip
        case w.AddSessionUsers(session_id=session_id, user_ids=user_ids):
            for user_id in user_ids:  # in join order: ord follows
                await conn.execute(
                    "INSERT INTO session_users (session_id, user_id) VALUES (%s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (session_id, user_id),
                )
                await conn.execute(
                    "INSERT INTO session_agent_users (session_id, agent_id, user_id) "
                    "SELECT session_id, agent_id, %s FROM session_agents WHERE session_id = %s "
                    "ORDER BY ord ON CONFLICT DO NOTHING",
                    (user_id, session_id),
                )
        case w.InsertMessages(messages=messages):
            await cur.executemany(
                "INSERT INTO messages (session_id, seq, message_id, role, content, created_at, "
                "user_id, name, agent_id, weighted_tokens) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [message_params(new.message, new.weighted_tokens) for new in messages],
            )
        case w.AdvanceSession() as a:
            await conn.execute(
                "UPDATE sessions SET last_seq = %s, last_message_at = %s WHERE session_id = %s",
                (a.last_seq, a.last_message_at, a.session_id),
            )
            await conn.execute(
                "UPDATE session_agents SET pending_messages = pending_messages + %s, "
                "pending_weighted_tokens = pending_weighted_tokens + %s, last_message_at = %s "
                "WHERE session_id = %s",
                (a.messages, a.weighted_tokens, a.last_message_at, a.session_id),
            )
        case w.PutConsolidated(blob=blob):
            sk = blob.scope_key
            await conn.execute(
                "INSERT INTO consolidated (scope_key, scope, agent_id, user_id, session_id, "
                "version, body) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (scope_key) "
                "DO UPDATE SET version = excluded.version, body = excluded.body",
                (
                    sk.key, sk.scope, sk.agent_id, sk.user_id, sk.session_id, blob.version,
                    Jsonb(blob.model_dump(mode="json")),
                ),
            )  # fmt: skip
        case w.AbsorbReflections(reflection_ids=ids, version=version):
            await conn.execute(
                "UPDATE reflections SET absorbed_into_version = %s WHERE reflection_id = ANY(%s)",
                (version, list(ids)),
            )
        case w.SetReflectionContent(reflection_id=reflection_id, content=content):
            await conn.execute(
                "UPDATE reflections SET body = jsonb_set(body, '{content}', to_jsonb(%s::text)) "
                "WHERE reflection_id = %s",
                (content, reflection_id),
            )
        case w.DeleteReflection(reflection_id=reflection_id):
            await conn.execute("DELETE FROM reflections WHERE reflection_id = %s", (reflection_id,))
        case lw.LifecycleOp():
            await _apply_lifecycle(conn, write)
        case w.PutApiKey(key=key):
            await conn.execute(
                "INSERT INTO api_keys (key_id, record, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key_id) DO UPDATE SET record = excluded.record",
                (key.key_id, Jsonb(key.model_dump(mode="json")), key.created_at),
            )
        case _:
            assert_never(write)


async def _apply_lifecycle(conn: Conn, write: lw.LifecycleWrite) -> None:
    cur = conn.cursor()
    match write:
        case lw.InsertAgents(configs=configs):
            await cur.executemany(
                "INSERT INTO agents (agent_id, config) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(c.agent_id, Jsonb(c.model_dump(mode="json"))) for c in configs],
            )
        case lw.SetFactAccess(fact_id=fact_id, access_count=n, last_accessed_at=at):
            await conn.execute(
                UPSERT_ACCESS.format(
                    rows="SELECT fact_id, %s, %s FROM facts WHERE fact_id = %s",
                    counts="access_count = excluded.access_count",
                ).encode(),
                (n, at, fact_id),
            )
        case lw.ImportReflections(reflections=reflections):
            await cur.executemany(INSERT_REFLECTION, [reflection_params(r) for r in reflections])
        case lw.SetSessionHead(session_id=sid, last_seq=seq, last_message_at=at):
            await conn.execute(
                "UPDATE sessions SET last_seq = %s, last_message_at = %s WHERE session_id = %s",
                (seq, at, sid),
            )
            await conn.execute(
                "UPDATE session_agents SET last_message_at = %s WHERE session_id = %s", (at, sid)
            )
        case lw.PutErasure() as e:
            await conn.execute(
                "INSERT INTO erasures (agent_key, user_id, epoch, forgotten_at, counts) "
                "VALUES (%s, %s, %s, %s, %s::jsonb) ON CONFLICT (agent_key, user_id) DO UPDATE "
                "SET epoch = excluded.epoch, forgotten_at = excluded.forgotten_at, "
                "counts = excluded.counts",
                (e.agent_key, e.user_id, e.epoch, e.forgotten_at, e.counts_json),
            )
        case lw.DeleteFacts(fact_ids=ids):
            await conn.execute("DELETE FROM facts WHERE fact_id = ANY(%s)", (list(ids),))
            await conn.execute("DELETE FROM fact_reembed WHERE fact_id = ANY(%s)", (list(ids),))
        case lw.DeleteScope(key=key):
            await conn.execute("DELETE FROM reflections WHERE scope_key = %s", (key,))
            await conn.execute("DELETE FROM consolidated WHERE scope_key = %s", (key,))
        case lw.DeleteSessions(session_ids=ids):
            # messages, session_agents and session users go by ON DELETE CASCADE.
            for table in ("reflections", "consolidated"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE scope = 'session' AND session_id = ANY(%s)".encode(),
                    (list(ids),),
                )
            await conn.execute("DELETE FROM sessions WHERE session_id = ANY(%s)", (list(ids),))
        case lw.DeleteUserMessages(session_id=sid, user_id=user_id):
            for table in ("messages", "session_users", "session_agent_users"):
                await conn.execute(
                    f"DELETE FROM {table} WHERE session_id = %s AND user_id = %s".encode(),
                    (sid, user_id),
                )
        case lw.DeleteEmbeddings(text_hashes=hashes):
            await conn.execute(
                "DELETE FROM embedding_cache WHERE text_hash = ANY(%s)", (list(hashes),)
            )
        case _:
            assert_never(write)
