"""The planners' writes (memory.store.rules.writes) as SQL, inside the caller's transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import assert_never

from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sqlite.codec import (
    history_to_json,
    message_params,
    reflection_params,
    to_blob,
    to_us,
)
from memory.store.sqlite.lifecycle_writes import apply_lifecycle
from memory.store.sqlite.meta import bump_version, rows_in
from memory.store.sqlite.reembed import swap_side_vectors
from memory.store.sqlite.schema import fact_counter_key

_INSERT_FACT = """
INSERT INTO facts (fact_id, agent_id, user_id, scope, content, hash, embedding, embedding_model,
    source_session_id, source_message_ids, formation_id, said_at, formed_at, updated_at, version,
    previous_content, history, invalidated_at, invalidated_by, change_seq)
VALUES (:fact_id, :agent_id, :user_id, :scope, :content, :hash, :embedding, :embedding_model,
    :source_session_id, :source_message_ids, :formation_id, :said_at, :formed_at, :updated_at,
    :version, :previous_content, :history, :invalidated_at, :invalidated_by, :change_seq)
"""
_UPDATE_FACT = """
UPDATE facts SET content = :content, hash = :hash, embedding = coalesce(:embedding, embedding),
    embedding_model = :embedding_model, source_message_ids = :source_message_ids,
    formation_id = :formation_id, said_at = :said_at, updated_at = :updated_at, version = :version,
    previous_content = :previous_content, history = :history, invalidated_at = :invalidated_at,
    invalidated_by = :invalidated_by, change_seq = :change_seq
WHERE fact_id = :fact_id
"""


def _put_fact(conn: sqlite3.Connection, put: w.PutFact, change_seq: int) -> None:
    fact = put.fact
    params = {
        **fact.model_dump(include={"fact_id", "agent_id", "user_id", "scope", "content", "hash"}),
        "embedding": None if put.embedding is None else to_blob(list(put.embedding)),
        "embedding_model": fact.embedding_model,
        "source_session_id": fact.source_session_id,
        "source_message_ids": json.dumps(fact.source_message_ids),
        "formation_id": fact.formation_id,
        "said_at": None if fact.said_at is None else to_us(fact.said_at),
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


def apply_writes(conn: sqlite3.Connection, writes: Iterable[w.Write]) -> None:
    # Every fact write of a transaction is stamped with one bump of the agent's fact counter,
    # so that every process's vector cache re-reads exactly those rows.
    stamps: dict[str, int] = {}
    for write in writes:
        _apply(conn, write, stamps)


def _apply(conn: sqlite3.Connection, write: w.Write, stamps: dict[str, int]) -> None:
    match write:
        case w.PutFact(fact=fact):
            if fact.agent_id not in stamps:
                stamps[fact.agent_id] = bump_version(conn, fact_counter_key(fact.agent_id))
            _put_fact(conn, write, stamps[fact.agent_id])
        case w.SwapSideVectors(model=model, dimension=dimension):
            swap_side_vectors(conn, model, dimension)
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
        case w.MoveCursor(state=s):
            conn.execute(
                "UPDATE session_agents SET cursor_seq = ?, formations = ?, "
                "pending_messages = ?, pending_weighted_tokens = ? "
                "WHERE session_id = ? AND agent_id = ?",
                (
                    s.cursor_seq, s.formations, s.pending_messages,
                    s.pending_weighted_tokens, s.session_id, s.agent_id,
                ),
            )  # fmt: skip
        case w.BumpScopeVersions(keys=keys):
            for key in keys:
                bump_version(conn, key)
        case w.RecordFormation(result=result, committed_at=committed_at):
            conn.execute(
                "INSERT INTO formation_commits (formation_id, committed_at, result) "
                "VALUES (?, ?, ?)",
                (result.formation_id, to_us(committed_at), result.model_dump_json()),
            )
        case w.CreateSession(session_id=session_id, created_at=created_at):
            conn.execute(
                "INSERT INTO sessions (session_id, created_at) VALUES (?, ?)",
                (session_id, to_us(created_at)),
            )
        case w.AddSessionAgent(state=s):
            conn.execute(
                "INSERT INTO session_agents (session_id, agent_id, cursor_seq, pending_messages, "
                "pending_weighted_tokens, last_message_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    s.session_id, s.agent_id, s.cursor_seq, s.pending_messages,
                    s.pending_weighted_tokens,
                    None if s.last_message_at is None else to_us(s.last_message_at),
                ),
            )  # fmt: skip
        case w.AddSessionUsers(session_id=session_id, user_ids=user_ids):
            conn.executemany(
                "INSERT INTO session_users (session_id, user_id) VALUES (?, ?) "
                "ON CONFLICT (session_id, user_id) DO NOTHING",
                [(session_id, user_id) for user_id in user_ids],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO session_agent_users (session_id, agent_id, user_id) "
                "SELECT session_id, agent_id, ? FROM session_agents WHERE session_id = ? "
                "ORDER BY rowid",
                [(user_id, session_id) for user_id in user_ids],
            )
        case w.InsertMessages(messages=messages):
            conn.executemany(
                """
                INSERT INTO messages (session_id, seq, message_id, role, content, created_at,
                    user_id, name, agent_id, weighted_tokens)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [message_params(new.message, new.weighted_tokens) for new in messages],
            )
        case w.AdvanceSession() as a:
            last_at = to_us(a.last_message_at)
            conn.execute(
                "UPDATE sessions SET last_seq = ?, last_message_at = ? WHERE session_id = ?",
                (a.last_seq, last_at, a.session_id),
            )
            conn.execute(
                "UPDATE session_agents SET pending_messages = pending_messages + ?, "
                "pending_weighted_tokens = pending_weighted_tokens + ?, last_message_at = ? "
                "WHERE session_id = ?",
                (a.messages, a.weighted_tokens, last_at, a.session_id),
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
        case w.AbsorbReflections(reflection_ids=ids, version=version):
            sql = "UPDATE reflections SET absorbed_into_version = ? WHERE reflection_id IN"
            rows_in(conn, sql, ids, version)
        case w.SetReflectionContent(reflection_id=reflection_id, content=content):
            conn.execute(
                "UPDATE reflections SET content = ? WHERE reflection_id = ?",
                (content, reflection_id),
            )
        case w.DeleteReflection(reflection_id=reflection_id):
            conn.execute("DELETE FROM reflections WHERE reflection_id = ?", (reflection_id,))
        case lw.LifecycleOp():
            apply_lifecycle(conn, write)
        case w.PutApiKey(key=key, new=new):
            verb = "INSERT" if new else "REPLACE"
            conn.execute(
                f"{verb} INTO api_keys (key_id, record, created_at) VALUES (?, ?, ?)",
                (key.key_id, key.model_dump_json(), to_us(key.created_at)),
            )
        case _:
            assert_never(write)
