"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) of the records SQLite
stores its own way (facts with their change stamps, reflections and blobs in columns), inside the
caller's transaction; the others are memory.store.sql.writes'."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from memory.store.records import vector_bytes
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sql.writes import apply_shared, bump_version
from memory.store.sqlite.codec import history_to_json, reflection_params, to_us
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.reembed import swap_side_vectors
from memory.store.sqlite.schema import fact_counter_key, facts_purge_key

_INSERT_FACT = """
INSERT INTO facts (fact_id, agent_id, user_id, scope, content, hash, embedding, embedding_model,
    source_session_id, source_message_ids, formation_id, said_at, said_utc_offset_minutes,
    formed_at, updated_at, version, previous_content, history, invalidated_at, invalidated_by,
    change_seq)
VALUES (:fact_id, :agent_id, :user_id, :scope, :content, :hash, :embedding, :embedding_model,
    :source_session_id, :source_message_ids, :formation_id, :said_at, :said_utc_offset_minutes,
    :formed_at, :updated_at, :version, :previous_content, :history, :invalidated_at,
    :invalidated_by, :change_seq)
"""
_UPDATE_FACT = """
UPDATE facts SET content = :content, hash = :hash, embedding = coalesce(:embedding, embedding),
    embedding_model = :embedding_model, source_session_id = :source_session_id,
    source_message_ids = :source_message_ids, formation_id = :formation_id, said_at = :said_at,
    said_utc_offset_minutes = :said_utc_offset_minutes, updated_at = :updated_at, version = :version, previous_content = :previous_content,
    history = :history, invalidated_at = :invalidated_at, invalidated_by = :invalidated_by,
    change_seq = :change_seq
WHERE fact_id = :fact_id
"""


def _put_fact(conn: sqlite3.Connection, put: w.PutFact, change_seq: int) -> None:
    fact = put.fact
    params = {
        **fact.model_dump(include={"fact_id", "agent_id", "user_id", "scope", "content", "hash"}),
        "embedding": None if put.embedding is None else vector_bytes(put.embedding),
        "embedding_model": fact.embedding_model,
        "source_session_id": fact.source_session_id,
        "source_message_ids": json.dumps(fact.source_message_ids),
        "formation_id": fact.formation_id,
        "said_at": None if fact.said_at is None else to_us(fact.said_at),
        "said_utc_offset_minutes": fact.said_utc_offset_minutes,
        "formed_at": to_us(fact.formed_at),
        "updated_at": to_us(fact.updated_at),
        "version": fact.version,
        "previous_content": fact.previous_content,
        "history": history_to_json(fact.history),
        "invalidated_at": None if fact.invalidated_at is None else to_us(fact.invalidated_at),
        "invalidated_by": fact.invalidated_by,
        "change_seq": change_seq,
    }
    conn.execute(_INSERT_FACT if put.new else _UPDATE_FACT, params)


async def apply_writes(db: SQLiteDb, writes: Iterable[w.Write]) -> None:
    # Every fact write of a transaction is stamped with one bump of the agent's fact counter,
    # so that every process's vector cache re-reads exactly those rows.
    stamps: dict[str, int] = {}
    for write in writes:
        await _apply(db, write, stamps)


async def _apply(db: SQLiteDb, write: w.Write, stamps: dict[str, int]) -> None:
    conn = db.conn
    match write:
        case w.PutFact(fact=fact):
            if fact.agent_id not in stamps:
                stamps[fact.agent_id] = await bump_version(db, fact_counter_key(fact.agent_id))
            _put_fact(conn, write, stamps[fact.agent_id])
        case w.SwapSideVectors(model=model, dimension=dimension):
            await swap_side_vectors(db, model, dimension)
        case w.SetEmbeddingMeta(model=model, dimension=dimension):
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("embedding_model", model), ("embedding_dimension", str(dimension))],
            )
        case w.InsertReflections(reflections=reflections):
            conn.executemany(
                """
                INSERT INTO reflections (reflection_id, scope_key, scope, agent_id, user_id,
                    session_id, content, source_session_id, formed_at, source_message_ids,
                    formation_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [reflection_params(r) for r in reflections],
            )
        case w.PutConsolidated(blob=blob):
            sk = blob.scope_key
            conn.execute(
                """
                INSERT INTO consolidated (scope_key, scope, agent_id, user_id, session_id,
                    content, version, word_limit, updated_at, edited_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (scope_key) DO UPDATE SET content = excluded.content,
                    version = excluded.version, word_limit = excluded.word_limit,
                    updated_at = excluded.updated_at, edited_by = excluded.edited_by
                """,
                (
                    sk.key, sk.scope, sk.agent_id, sk.user_id, sk.session_id, blob.content,
                    blob.version, blob.word_limit, to_us(blob.updated_at), blob.edited_by,
                ),
            )  # fmt: skip
        case w.SetReflectionContent(reflection_id=reflection_id, content=content):
            conn.execute(
                "UPDATE reflections SET content = ? WHERE reflection_id = ?",
                (content, reflection_id),
            )
        case lw.SetFactAccess(fact_id=fact_id, access_count=n, last_accessed_at=at):
            conn.execute(
                "UPDATE facts SET access_count = ?, last_accessed_at = ? WHERE fact_id = ?",
                (n, None if at is None else to_us(at), fact_id),
            )
        case lw.ImportReflections(reflections=reflections):
            conn.executemany(
                """
                INSERT INTO reflections (reflection_id, scope_key, scope, agent_id, user_id,
                    session_id, content, source_session_id, formed_at, source_message_ids,
                    formation_id, absorbed_into_version)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [(*reflection_params(r), r.absorbed_into_version) for r in reflections],
            )
        case lw.PutErasure() as e:
            conn.execute(
                "INSERT INTO erasures (agent_key, user_id, epoch, forgotten_at, counts) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_key, user_id) DO UPDATE SET "
                "epoch = excluded.epoch, forgotten_at = excluded.forgotten_at, "
                "counts = excluded.counts",
                (e.agent_key, e.user_id, e.epoch, to_us(e.forgotten_at), e.counts_json),
            )
        case lw.DeleteFacts(agent_id=agent_id, fact_ids=ids):
            # The FTS rows go with them (facts_fts_delete trigger); history is in the row.
            await db.execute_in("DELETE FROM facts WHERE fact_id", ids)
            await db.execute_in("DELETE FROM fact_reembed WHERE fact_id", ids)
            # FTS5 without its secure-delete option (off by default, absent before SQLite 3.42)
            # only appends a delete marker: the erased terms stay in facts_fts_data until a
            # merge rewrites their segments.
            # 'optimize' merges them all into one, now, in the erasure's own transaction.
            conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')")
            await bump_version(db, facts_purge_key(agent_id))
        case _:
            await apply_shared(db, write)
