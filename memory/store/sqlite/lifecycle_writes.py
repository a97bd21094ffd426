"""The data-lifecycle writes (memory.store.rules.lifecycle_writes) as SQL."""

from __future__ import annotations

import sqlite3
from typing import assert_never

from memory.store.rules import lifecycle_writes as lw
from memory.store.sqlite.codec import reflection_params, to_us
from memory.store.sqlite.meta import bump_version, rows_in
from memory.store.sqlite.schema import facts_purge_key


def apply_lifecycle(conn: sqlite3.Connection, write: lw.LifecycleWrite) -> None:
    match write:
        case lw.InsertAgents(configs=configs):
            conn.executemany(
                "INSERT INTO agents (agent_id, config) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(c.agent_id, c.model_dump_json()) for c in configs],
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
        case lw.SetSessionHead(session_id=sid, last_seq=seq, last_message_at=at):
            conn.execute(
                "UPDATE sessions SET last_seq = ?, last_message_at = ? WHERE session_id = ?",
                (seq, to_us(at), sid),
            )
            conn.execute(
                "UPDATE session_agents SET last_message_at = ? WHERE session_id = ?",
                (to_us(at), sid),
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
            rows_in(conn, "DELETE FROM facts WHERE fact_id IN", ids)
            bump_version(conn, facts_purge_key(agent_id))
        case lw.DeleteScope(key=key):
            conn.execute("DELETE FROM reflections WHERE scope_key = ?", (key,))
            conn.execute("DELETE FROM consolidated WHERE scope_key = ?", (key,))
        case lw.DeleteSessions(session_ids=ids):
            # messages, session_agents and session_users go by ON DELETE CASCADE.
            rows_in(conn, "DELETE FROM reflections WHERE scope = 'session' AND session_id IN", ids)
            rows_in(conn, "DELETE FROM consolidated WHERE scope = 'session' AND session_id IN", ids)
            rows_in(conn, "DELETE FROM sessions WHERE session_id IN", ids)
        case lw.DeleteUserMessages(session_id=sid, user_id=user_id):
            conn.execute(
                "DELETE FROM messages WHERE session_id = ? AND user_id = ?", (sid, user_id)
            )
            for table in ("session_users", "session_agent_users"):  # session-wide and per agent
                conn.execute(
                    f"DELETE FROM {table} WHERE session_id = ? AND user_id = ?", (sid, user_id)
                )
        case lw.DeleteEmbeddings(text_hashes=hashes):
            rows_in(conn, "DELETE FROM embedding_cache WHERE text_hash IN", hashes)
        case _:
            assert_never(write)
