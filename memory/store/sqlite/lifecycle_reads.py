"""The data-lifecycle snapshots of the SQLite backend (imports, forget_user, erasure epochs,
export), read inside the caller's transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from memory.ids import text_hash
from memory.models import AgentConfig
from memory.store.counts import ExportData
from memory.store.rules import Request
from memory.store.rules import erasure as er
from memory.store.rules import imports as ri
from memory.store.sqlite.codec import (
    FACT_COLUMNS,
    STATE_SQL,
    consolidated_from_row,
    fact_from_row,
    from_blob,
    message_from_row,
    opt_from_us,
    reflection_from_row,
    state_from_row,
)
from memory.store.sqlite.meta import read_embedding_meta, rows_in

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


def _stored_epoch(conn: sqlite3.Connection, agent_key: str, user_id: str) -> int:
    row = conn.execute(
        "SELECT epoch FROM erasures WHERE agent_key = ? AND user_id = ?", (agent_key, user_id)
    ).fetchone()
    return 0 if row is None else int(row[0])


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


def _pair_epochs(conn: sqlite3.Connection, pairs: Iterable[ri.Pair]) -> dict[ri.Pair, int]:
    return {
        (agent_id, user): epoch
        for agent_id, users in ri.users_by_agent(pairs).items()
        for user, epoch in read_epochs(conn, agent_id, users).items()
    }


def _ids(conn: sqlite3.Connection, sql: str, ids: Sequence[object], *first: object) -> set[str]:
    return {str(row[0]) for row in rows_in(conn, sql, ids, *first)}


def _fact_snapshot(conn: sqlite3.Connection, req: ri.FactImportRequest) -> ri.FactImportSnapshot:
    existing = _ids(conn, "SELECT fact_id FROM facts WHERE fact_id IN", req.fact_ids)
    valid = set()
    for agent_id, hash_ in req.hashes:
        rows = conn.execute(
            "SELECT agent_id, coalesce(user_id, ''), scope, hash FROM facts "
            "WHERE agent_id = ? AND hash = ? AND invalidated_at IS NULL",
            (agent_id, hash_),
        )
        valid |= {(r[0], r[1], r[2], r[3]) for r in rows}
    return ri.FactImportSnapshot(
        frozenset(existing), frozenset(valid), read_embedding_meta(conn),
        _pair_epochs(conn, req.pairs),
    )  # fmt: skip


def _session_snapshot(
    conn: sqlite3.Connection, req: ri.SessionImportRequest
) -> ri.SessionImportSnapshot:
    sid = req.session_id
    head = conn.execute(
        "SELECT last_seq, last_message_at FROM sessions WHERE session_id = ?", (sid,)
    ).fetchone()
    users = conn.execute(
        "SELECT user_id FROM session_users WHERE session_id = ? ORDER BY rowid", (sid,)
    )
    states = conn.execute(STATE_SQL + " WHERE sa.session_id = ?", (sid,)).fetchall()
    stored = rows_in(
        conn, "SELECT message_id, seq FROM messages WHERE session_id = ? AND message_id IN",
        req.message_ids, sid,
    )  # fmt: skip
    taken = rows_in(conn, "SELECT seq FROM messages WHERE session_id = ? AND seq IN", req.seqs, sid)
    pending = conn.execute(
        "SELECT count(*), coalesce(sum(weighted_tokens), 0.0) FROM messages "
        "WHERE session_id = ? AND seq > ?",
        (sid, req.max_seq),
    ).fetchone()
    return ri.SessionImportSnapshot(
        exists=head is not None,
        last_seq=0 if head is None else int(head[0]),
        last_message_at=None if head is None else opt_from_us(head[1]),
        user_ids=tuple(r[0] for r in users),
        states={s.agent_id: s for s in map(state_from_row, states)},
        stored={r[0]: int(r[1]) for r in stored},
        taken=frozenset(int(r[0]) for r in taken),
        pending_after_max=(int(pending[0]), float(pending[1])),
        epochs=_pair_epochs(conn, req.pairs),
    )


def _user_sessions(conn: sqlite3.Connection, req: er.ForgetRequest) -> list[er.UserSession]:
    rows = conn.execute(
        "SELECT su.session_id FROM session_users AS su JOIN session_agents AS sa "
        "ON sa.session_id = su.session_id WHERE su.user_id = ? AND sa.agent_id = ?",
        (req.user_id, req.agent_id),
    ).fetchall()
    sessions = []
    for (sid,) in rows:
        users = conn.execute(
            "SELECT user_id FROM session_users WHERE session_id = ? ORDER BY rowid", (sid,)
        )
        states = [
            state_from_row(r) for r in conn.execute(STATE_SQL + " WHERE sa.session_id = ?", (sid,))
        ]
        counts = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE user_id = ?) FROM messages WHERE session_id = ?",
            (req.user_id, sid),
        ).fetchone()
        pending = []
        for state in states:
            row = conn.execute(
                "SELECT count(*), coalesce(sum(weighted_tokens), 0.0) FROM messages "
                "WHERE session_id = ? AND seq > ? AND user_id IS NOT ?",
                (sid, state.cursor_seq, req.user_id),
            ).fetchone()
            pending.append((state, int(row[0]), float(row[1])))
        sessions.append(
            er.UserSession(
                session_id=sid,
                user_ids=tuple(r[0] for r in users),
                agent_ids=tuple(s.agent_id for s in states),
                messages=int(counts[0]),
                user_messages=int(counts[1]),
                states=tuple(pending),
            )
        )
    return sessions


def _forget_snapshot(conn: sqlite3.Connection, req: er.ForgetRequest) -> er.ForgetSnapshot:
    facts = [
        fact_from_row(row)
        for row in conn.execute(
            f"SELECT {FACT_COLUMNS} FROM facts WHERE agent_id = ? AND user_id = ?",
            (req.agent_id, req.user_id),
        )
    ]
    key = f"user:{req.agent_id}:{req.user_id}"
    reflections = conn.execute("SELECT count(*) FROM reflections WHERE scope_key = ?", (key,))
    blob = conn.execute("SELECT 1 FROM consolidated WHERE scope_key = ?", (key,)).fetchone()
    text_hashes, content_hashes = er.cache_candidates(facts)
    cached = _ids(conn, "SELECT text_hash FROM embedding_cache WHERE text_hash IN", text_hashes)
    # Texts another fact (any agent, any user) still holds as its content keep their entry.
    others = rows_in(
        conn,
        "SELECT content FROM facts WHERE NOT (agent_id = ? AND coalesce(user_id, '') = ?) "
        "AND hash IN",
        content_hashes, req.agent_id, req.user_id,
    )  # fmt: skip
    in_use = {text_hash(row[0]) for row in others}
    return er.ForgetSnapshot(
        epoch=_stored_epoch(conn, req.agent_id, req.user_id),
        facts=facts,
        reflections=int(reflections.fetchone()[0]),
        blob=blob is not None,
        sessions=_user_sessions(conn, req),
        cached=frozenset(cached),
        in_use=frozenset(in_use) & frozenset(cached),
    )


def lifecycle_snapshot(conn: sqlite3.Connection, request: Request[object]) -> object:
    match request:
        case ri.AgentsRequest(agent_ids=ids):
            return frozenset(_ids(conn, "SELECT agent_id FROM agents WHERE agent_id IN", ids))
        case ri.FactImportRequest():
            return _fact_snapshot(conn, request)
        case ri.BlobImportRequest(keys=keys, pairs=pairs):
            rows = rows_in(
                conn,
                "SELECT scope_key, content, version FROM consolidated WHERE scope_key IN",
                keys,
            )
            stored = {r[0]: (str(r[1]), int(r[2])) for r in rows}
            return ri.BlobImportSnapshot(stored, _pair_epochs(conn, pairs))
        case ri.ReflectionImportRequest(reflection_ids=ids, keys=keys, pairs=pairs):
            existing = _ids(
                conn, "SELECT reflection_id FROM reflections WHERE reflection_id IN", ids
            )
            count = (
                "SELECT count(*) FROM reflections WHERE scope_key = ? "
                "AND absorbed_into_version IS NULL"
            )
            buffered = {k: int(conn.execute(count, (k,)).fetchone()[0]) for k in keys}
            return ri.ReflectionImportSnapshot(
                frozenset(existing), buffered, _pair_epochs(conn, pairs)
            )
        case ri.SessionImportRequest():
            return _session_snapshot(conn, request)
        case er.ForgetRequest():
            return _forget_snapshot(conn, request)
        case er.EraseAllRequest(user_id=user_id):
            return _stored_epoch(conn, er.ALL_AGENTS, user_id)
        case _:
            raise TypeError(f"no snapshot for {request!r}")


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
