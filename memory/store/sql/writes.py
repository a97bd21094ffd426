"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) both SQL backends apply
with the same SQL: every one but the few a backend writes its own way (access counts, a
re-embed's swap of the vectors, the upkeep of its indexes), which its ``apply`` takes before
handing the rest here (and a backend that adds to a shared write hands it here too). The domain
records are written here too, each dialect giving their columns (``Db.fact_row``,
``reflection_columns``, ``consolidated_columns``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import assert_never

from memory import switch_marks
from memory.degraded import ERASED_REASON
from memory.models import Reflection, ScopeKey
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.rules.withheld import stored
from memory.store.sql.db import Db

type SharedLifecycle = (
    lw.InsertAgents
    | lw.SetSessionHead
    | lw.DeleteScope
    | lw.DeleteSessions
    | lw.DeleteUserMessages
    | lw.DeleteReplies
    | lw.SetWithheld
    | lw.DeleteEmbeddings
    | lw.PutErasure
    | lw.DeleteFacts
    | lw.ImportReflections
)
type SharedWrite = (
    w.PutFact
    | w.SetEmbeddingMeta
    | w.MoveCursor
    | w.BumpScopeVersions
    | w.RecordFormation
    | w.RecordDegraded
    | w.MarkReformed
    | w.CreateSession
    | w.AddSessionAgent
    | w.SetSwitchMarks
    | w.AddSessionUsers
    | w.MarkGuests
    | w.InsertMessages
    | w.AdvanceSession
    | w.InsertReflections
    | w.SetReflectionContent
    | w.PutConsolidated
    | w.AbsorbReflections
    | w.DeleteReflection
    | w.PutAgent
    | w.PutApiKey
    | w.MarkPurged
    | SharedLifecycle
)


def _param(column: str) -> str:
    return f"%({column})s"


def _insert(
    table: str, row: Mapping[str, object], then: str = "", value: Callable[[str], str] = _param
) -> str:
    """The INSERT of a row given by column name, each value ``value``'s SQL (its parameter)."""
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(map(value, row))}) {then}"


# What an update of a fact keeps (rules.writes.PutFact): whose fact it is, when it was formed and
# inserted; its vector too unless it brings one.
_KEPT = frozenset({"fact_id", "agent_id", "user_id", "scope", "formed_at", "inserted_at"})


def _fact_sql(db: Db, row: Mapping[str, object], *, new: bool) -> str:
    if new:
        return _insert("facts", row, value=db.fact_value)
    values = {column: db.fact_value(column) for column in row}
    values["embedding"] = f"coalesce({values['embedding']}, embedding)"
    sets = ", ".join(f"{c} = {value}" for c, value in values.items() if c not in _KEPT)
    return f"UPDATE facts SET {sets} WHERE fact_id = %(fact_id)s"


async def apply_writes[D: Db](
    db: D, writes: Iterable[w.Write], apply: Callable[[D, w.Write], Awaitable[None]]
) -> None:
    """The planners' writes in order, each by ``apply`` (the backend's, which hands the shared
    ones to apply_shared), but runs of new facts: one executemany each (one round trip in
    psycopg's pipeline mode: a formation or an import of many facts is not one per fact)."""
    new: list[dict[str, object]] = []
    for write in writes:
        if isinstance(write, w.PutFact) and write.new:
            new.append(await db.fact_row(write))
            continue
        if new:
            await db.execute_many(_fact_sql(db, new[0], new=True), new)
            new = []
        await apply(db, write)
    if new:
        await db.execute_many(_fact_sql(db, new[0], new=True), new)


async def bump_version(db: Db, key: str) -> int:
    """Increment one change counter (created at 1) and return its new value."""
    row = await db.fetch_one(
        "INSERT INTO scope_versions (key, version) VALUES (%s, 1) ON CONFLICT (key) "
        "DO UPDATE SET version = scope_versions.version + 1 RETURNING version",
        (key,),
    )
    assert row is not None
    return int(row["version"])


def _scope_columns(key: ScopeKey) -> dict[str, object]:
    return {
        "scope_key": key.key, "scope": key.scope, "agent_id": key.agent_id,
        "user_id": key.user_id, "session_id": key.session_id,
    }  # fmt: skip


def _meta_rows(model: str, dimension: int) -> list[tuple[str, str]]:
    return [("embedding_model", model), ("embedding_dimension", str(dimension))]


async def switched_embedding(db: Db, model: str, dimension: int) -> None:
    """The end of a re-embed's switch (rules.writes.SwapSideVectors), once the backend swapped
    the side vectors of fact_reembed into facts: the stored (model, dimension) replaced, the
    side vectors gone."""
    await db.execute_many(
        "INSERT INTO meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        _meta_rows(model, dimension),
    )
    await db.execute("DELETE FROM fact_reembed")


async def apply_shared(db: Db, write: SharedWrite) -> None:
    match write:
        case w.PutFact(new=new):
            row = await db.fact_row(write)
            await db.execute(_fact_sql(db, row, new=new), row)
        case w.SetEmbeddingMeta(model=model, dimension=dimension):
            # No ON CONFLICT: the planner saw no meta, so a stored one is a concurrent commit's.
            await db.execute_many(
                "INSERT INTO meta (key, value) VALUES (%s, %s)", _meta_rows(model, dimension)
            )
        case w.MoveCursor(state=s):
            await db.execute(
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
                await bump_version(db, key)
        case w.RecordFormation(result=result, committed_at=committed_at):
            await db.execute(
                "INSERT INTO formation_commits (formation_id, committed_at, result) "
                "VALUES (%s, %s, %s)",
                (result.formation_id, db.time(committed_at), db.document(result)),
            )
        case w.RecordDegraded(windows=windows):
            # memory/degraded.py, keyed by (session, agent, after_seq, upto_seq, step): a window
            # already stored is left as it is.
            await db.execute_many(
                "INSERT INTO degraded_windows (session_id, agent_id, after_seq, upto_seq, step, "
                "reason, formation_id, degraded_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [
                    (
                        d.session_id, d.agent_id, d.after_seq, d.upto_seq, d.step, d.reason,
                        d.formation_id, db.time(d.degraded_at),
                    )
                    for d in windows
                ],
            )  # fmt: skip
        case w.MarkReformed(keys=keys, at=at):
            await db.execute_many(
                "UPDATE degraded_windows SET reformed_at = %s WHERE agent_id = %s "
                "AND session_id = %s AND after_seq = %s AND upto_seq = %s AND step = %s",
                [(db.time(at), *key) for key in keys],
            )
        case w.CreateSession(session_id=session_id, created_at=created_at):
            await db.execute(
                "INSERT INTO sessions (session_id, created_at) VALUES (%s, %s)",
                (session_id, db.time(created_at)),
            )
        case w.AddSessionAgent(state=s):
            await db.execute(
                "INSERT INTO session_agents (session_id, agent_id, cursor_seq, pending_messages, "
                "pending_weighted_tokens, last_message_at) VALUES (%s, %s, %s, %s, %s, %s)",
                (
                    s.session_id, s.agent_id, s.cursor_seq, s.pending_messages,
                    s.pending_weighted_tokens, db.opt_time(s.last_message_at),
                ),
            )  # fmt: skip
        case w.SetSwitchMarks(session_id=sid, agent_id=agent_id) as marks:
            text = json.dumps(switch_marks.dumped(marks.marks, marks.recorded_under))
            await db.execute(
                "UPDATE session_agents SET switch_marks = %s WHERE session_id = %s AND agent_id = %s",
                (text, sid, agent_id),
            )
        case w.AddSessionUsers(session_id=session_id, user_ids=user_ids):
            for user_id in user_ids:  # in join order, which the insertion order column keeps
                await db.execute(
                    "INSERT INTO session_users (session_id, user_id) VALUES (%s, %s) "
                    "ON CONFLICT DO NOTHING",
                    (session_id, user_id),
                )
                await db.execute(
                    "INSERT INTO session_agent_users (session_id, agent_id, user_id) "
                    "SELECT session_id, agent_id, %s FROM session_agents WHERE session_id = %s "
                    f"ORDER BY {db.ord} ON CONFLICT DO NOTHING",
                    (user_id, session_id),
                )
        case w.MarkGuests(session_id=session_id):
            await db.execute(
                "UPDATE sessions SET has_guests = true WHERE session_id = %s", (session_id,)
            )
        case w.InsertMessages(messages=messages):
            await db.execute_many(
                "INSERT INTO messages (session_id, seq, message_id, role, content, created_at, "
                "user_id, name, agent_id, weighted_tokens, utc_offset_minutes) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        m.session_id, m.seq, m.message_id, m.role, m.content,
                        db.time(m.created_at), m.user_id, m.name, m.agent_id, new.weighted_tokens,
                        m.utc_offset_minutes,
                    )
                    for new in messages
                    for m in (new.message,)
                ],
            )  # fmt: skip
        case w.AdvanceSession() as a:
            last_at = db.time(a.last_message_at)
            await db.execute(
                "UPDATE sessions SET last_seq = %s, last_message_at = %s WHERE session_id = %s",
                (a.last_seq, last_at, a.session_id),
            )
            await db.execute(
                "UPDATE session_agents SET pending_messages = pending_messages + %s, "
                "pending_weighted_tokens = pending_weighted_tokens + %s, last_message_at = %s, "
                "purged = false WHERE session_id = %s",
                (a.messages, a.weighted_tokens, last_at, a.session_id),
            )
        case w.PutConsolidated(blob=blob):
            row = {
                **_scope_columns(blob.scope_key),
                **db.consolidated_columns(blob),
                "version": blob.version,
                "said_from": db.opt_time(blob.said_from),
                # The version said_from was written for (records.blob_said_from).
                "said_from_version": blob.version,
            }
            kept = _scope_columns(blob.scope_key).keys()
            update = ", ".join(f"{c} = excluded.{c}" for c in row if c not in kept)
            await db.execute(
                _insert("consolidated", row, f"ON CONFLICT (scope_key) DO UPDATE SET {update}"), row
            )
        case w.SetReflectionContent(reflection_id=reflection_id, content=content):
            await db.execute(
                f"UPDATE reflections SET {db.set_reflection_content} WHERE reflection_id = %s",
                (content, reflection_id),
            )
        case w.InsertReflections(reflections=reflections):
            await _insert_reflections(db, reflections, new=True)
        case w.AbsorbReflections(reflection_ids=ids, version=version):
            sql = "UPDATE reflections SET absorbed_into_version = %s WHERE reflection_id"
            await db.execute_in(sql, ids, version)
        case w.DeleteReflection(reflection_id=reflection_id):
            await db.execute("DELETE FROM reflections WHERE reflection_id = %s", (reflection_id,))
        case w.PutAgent(config=config):
            await db.execute(
                "INSERT INTO agents (agent_id, config) VALUES (%s, %s) "
                "ON CONFLICT (agent_id) DO UPDATE SET config = excluded.config",
                (config.agent_id, db.document(config)),
            )
        case w.PutApiKey(key=key):
            # A new key's id is unknown (the planner read it); an existing one is overwritten.
            await db.execute(
                "INSERT INTO api_keys (key_id, record, created_at) VALUES (%s, %s, %s) "
                "ON CONFLICT (key_id) DO UPDATE SET record = excluded.record",
                (key.key_id, db.document(key), db.time(key.created_at)),
            )
        case w.MarkPurged(session_id=session_id, agent_id=agent_id):
            await db.execute(
                "UPDATE session_agents SET purged = true WHERE session_id = %s AND agent_id = %s",
                (session_id, agent_id),
            )
        case _:
            await _apply_lifecycle(db, write)


async def _apply_lifecycle(db: Db, write: SharedLifecycle) -> None:
    match write:
        case lw.InsertAgents(configs=configs):
            await db.execute_many(
                "INSERT INTO agents (agent_id, config) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                [(c.agent_id, db.document(c)) for c in configs],
            )
        case lw.SetSessionHead(session_id=sid, last_seq=seq, last_message_at=at):
            await db.execute(
                "UPDATE sessions SET last_seq = %s, last_message_at = %s WHERE session_id = %s",
                (seq, db.time(at), sid),
            )
            await db.execute(
                "UPDATE session_agents SET last_message_at = %s WHERE session_id = %s",
                (db.time(at), sid),
            )
        case lw.DeleteScope(key=key):
            await db.execute("DELETE FROM reflections WHERE scope_key = %s", (key,))
            await db.execute("DELETE FROM consolidated WHERE scope_key = %s", (key,))
        case lw.DeleteSessions(session_ids=ids, formations=formations):
            # messages, session_agents and session users go by ON DELETE CASCADE.
            for table in ("reflections", "consolidated"):
                await db.execute_in(
                    f"DELETE FROM {table} WHERE scope = 'session' AND session_id", ids
                )
            await db.execute_in("DELETE FROM degraded_windows WHERE session_id", ids)
            await db.execute_in("DELETE FROM sessions WHERE session_id", ids)
            for prefix in formations:  # substr, not LIKE: ids may hold "_"
                await db.execute(
                    "DELETE FROM formation_commits WHERE substr(formation_id, 1, %s) = %s",
                    (len(prefix), prefix),
                )
        case lw.DeleteUserMessages(session_id=sid, user_id=user_id, seqs=None):
            # The messages, then the user in the session and among each agent's participants.
            for table in ("messages", "session_users", "session_agent_users"):
                await db.execute(
                    f"DELETE FROM {table} WHERE session_id = %s AND user_id = %s", (sid, user_id)
                )
            await _erase_reasons(db, sid)
        case lw.DeleteUserMessages(session_id=sid, user_id=user_id, seqs=seqs, agents=agents):
            sql = "DELETE FROM messages WHERE session_id = %s AND user_id = %s AND seq"
            await db.execute_in(sql, list(seqs or ()), sid, user_id)
            sql = "DELETE FROM session_agent_users WHERE session_id = %s AND user_id = %s AND agent_id"
            await db.execute_in(sql, list(agents), sid, user_id)
            await _erase_reasons(db, sid)
        case lw.DeleteReplies(session_id=sid, seqs=seqs):
            sql = "DELETE FROM messages WHERE session_id = %s AND user_id IS NULL AND seq"
            await db.execute_in(sql, list(seqs), sid)
        case lw.SetWithheld(session_id=sid, agent_id=agent_id, withheld=withheld):
            await db.execute(
                "UPDATE session_agents SET withheld = %s WHERE session_id = %s AND agent_id = %s",
                (stored(dict(withheld)), sid, agent_id),
            )
        case lw.DeleteEmbeddings(text_hashes=hashes):
            await db.execute_in("DELETE FROM embedding_cache WHERE text_hash", hashes)
        case lw.PutErasure() as e:
            await db.execute(
                "INSERT INTO erasures (agent_key, user_id, epoch, forgotten_at, counts) "
                f"VALUES (%s, %s, %s, %s, {db.json_param}) ON CONFLICT (agent_key, user_id) "
                "DO UPDATE SET epoch = excluded.epoch, forgotten_at = excluded.forgotten_at, "
                "counts = excluded.counts",
                (e.agent_key, e.user_id, e.epoch, db.time(e.forgotten_at), e.counts_json),
            )
        case lw.ImportReflections(reflections=reflections):
            await _insert_reflections(db, reflections, new=False)
        case lw.DeleteFacts(fact_ids=ids):
            await db.execute_in("DELETE FROM facts WHERE fact_id", ids)
            await db.execute_in("DELETE FROM fact_reembed WHERE fact_id", ids)
        case _:
            assert_never(write)


async def _insert_reflections(db: Db, reflections: Sequence[Reflection], *, new: bool) -> None:
    """New reflections are buffered; imported ones keep their absorbed_into_version."""
    rows = [
        {
            "reflection_id": r.reflection_id,
            **_scope_columns(r.scope_key),
            **db.reflection_columns(r),
            "formed_at": db.time(r.formed_at),
            "absorbed_into_version": None if new else r.absorbed_into_version,
        }
        for r in reflections
    ]
    if rows:
        await db.execute_many(_insert("reflections", rows[0]), rows)


async def _erase_reasons(db: Db, session_id: str) -> None:
    await db.execute(
        "UPDATE degraded_windows SET reason = %s WHERE session_id = %s",
        (ERASED_REASON, session_id),
    )
