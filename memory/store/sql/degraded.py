"""Degraded windows (memory/degraded.py) in the table ``degraded_windows`` of both SQL backends,
keyed by (session, agent, after_seq, upto_seq, step); forget_user's DeleteSessions deletes a
session's with it (memory.store.sql.writes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory.degraded import DegradedWindow
from memory.store.sql.db import Db


async def insert_windows(db: Db, windows: Sequence[DegradedWindow]) -> None:
    """Each window whose key is not stored yet (a stored one is left as it is)."""
    for w in windows:
        await db.execute(
            "INSERT INTO degraded_windows (session_id, agent_id, after_seq, upto_seq, step, "
            "reason, formation_id, degraded_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (
                w.session_id, w.agent_id, w.after_seq, w.upto_seq, w.step, w.reason,
                w.formation_id, db.time(w.degraded_at),
            ),
        )  # fmt: skip


async def list_degraded(
    db: Db, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
) -> list[DegradedWindow]:
    terms = ["reformed_at IS NULL"] if not include_reformed else ["1 = 1"]
    params: dict[str, object] = {"agent": agent_id, "session": session_id, "limit": limit}
    if agent_id is not None:
        terms.append("agent_id = %(agent)s")
    if session_id is not None:
        terms.append("session_id = %(session)s")
    rows = await db.fetch(
        f"SELECT * FROM degraded_windows WHERE {' AND '.join(terms)} "
        "ORDER BY degraded_at DESC, agent_id, session_id, after_seq DESC, step LIMIT %(limit)s",
        params,
    )
    return [db.record(DegradedWindow, row) for row in rows]


async def mark_reformed(
    db: Db,
    agent_id: str,
    session_id: str,
    after_seq: int,
    upto_seq: int,
    steps: Sequence[str],
    at: datetime,
) -> int:
    marked = 0
    for step in dict.fromkeys(steps):
        marked += await db.execute(
            "UPDATE degraded_windows SET reformed_at = %s WHERE session_id = %s AND agent_id = %s "
            "AND step = %s AND after_seq >= %s AND upto_seq <= %s AND reformed_at IS NULL",
            (db.time(at), session_id, agent_id, step, after_seq, upto_seq),
        )
    return marked
