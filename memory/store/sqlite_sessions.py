"""Sessions and messages of the SQLite backend: bodies of transactions run on the worker thread."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from memory.errors import InvalidInputError
from memory.models import MessageIn, RecordOutcome, SessionAgentState
from memory.store.sqlite_codec import STATE_SQL, state_from_row, to_us

# The WHERE term `pending_messages > 0` repeats the partial index's, which lets SQLite use it;
# the row value comparison makes the page boundary part of the index range.
COLD_SESSIONS_SQL = (
    STATE_SQL
    + """
WHERE sa.pending_messages > 0
  AND sa.last_message_at <= :idle_before
  AND (sa.pending_messages >= :min_messages OR sa.pending_weighted_tokens >= :min_tokens)
  AND (sa.last_message_at, sa.session_id, sa.agent_id) > (:after_at, :after_session, :after_agent)
ORDER BY sa.last_message_at, sa.session_id, sa.agent_id
LIMIT :limit
"""
)

# Below every stored timestamp: the first page starts at the beginning of the index.
_BEFORE_ALL = -(2**63)


def weighted_tokens(message: MessageIn, weights: dict[str, float], chars_per_token: float) -> float:
    """weight(role) * ceil(len / chars_per_token); roles without a weight take the 'other' one."""
    weight = weights.get(message.role, weights.get("other", 1.0))
    return weight * math.ceil(len(message.content) / chars_per_token)


def record_messages_tx(
    conn: sqlite3.Connection,
    session_id: str,
    agent_id: str,
    messages: Sequence[MessageIn],
    weights: dict[str, float],
    chars_per_token: float,
    now: datetime,
) -> RecordOutcome:
    if chars_per_token <= 0:
        raise InvalidInputError("chars_per_token must be > 0")
    conn.execute(
        "INSERT INTO sessions (session_id, created_at) VALUES (?, ?) "
        "ON CONFLICT (session_id) DO NOTHING",
        (session_id, to_us(now)),
    )
    session = conn.execute(
        "SELECT last_seq, last_message_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    # A newcomer owes formation of everything already said: cursor 0, all messages pending.
    conn.execute(
        """
        INSERT INTO session_agents (session_id, agent_id, pending_messages,
            pending_weighted_tokens, last_message_at)
        SELECT :session, :agent, count(*), coalesce(sum(weighted_tokens), 0.0), :last_at
        FROM messages WHERE session_id = :session
        ON CONFLICT (session_id, agent_id) DO NOTHING
        """,
        {"session": session_id, "agent": agent_id, "last_at": session["last_message_at"]},
    )

    seq = int(session["last_seq"])
    last_at: int | None = session["last_message_at"]
    inserted = duplicates = 0
    added_tokens = 0.0
    for message in messages:
        tokens = weighted_tokens(message, weights, chars_per_token)
        created = to_us(message.created_at)
        cursor = conn.execute(
            """
            INSERT INTO messages (session_id, seq, message_id, role, content, created_at,
                user_id, name, agent_id, weighted_tokens)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (session_id, message_id) DO NOTHING
            """,
            (
                session_id, seq + 1, message.message_id, message.role, message.content, created,
                message.user_id, message.name, agent_id, tokens,
            ),
        )  # fmt: skip
        if cursor.rowcount == 0:
            duplicates += 1
            continue
        seq += 1
        inserted += 1
        added_tokens += tokens
        last_at = created if last_at is None else max(last_at, created)
        if message.role == "user" and message.user_id is not None:
            conn.execute(
                "INSERT INTO session_users (session_id, user_id) VALUES (?, ?) "
                "ON CONFLICT (session_id, user_id) DO NOTHING",
                (session_id, message.user_id),
            )

    if inserted:
        conn.execute(
            "UPDATE sessions SET last_seq = ?, last_message_at = ? WHERE session_id = ?",
            (seq, last_at, session_id),
        )
        conn.execute(
            """
            UPDATE session_agents SET pending_messages = pending_messages + ?,
                pending_weighted_tokens = pending_weighted_tokens + ?, last_message_at = ?
            WHERE session_id = ?
            """,
            (inserted, added_tokens, last_at, session_id),
        )
    state = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?", (session_id, agent_id)
    ).fetchone()
    return RecordOutcome(inserted=inserted, duplicates=duplicates, state=state_from_row(state))


def read_state(
    conn: sqlite3.Connection, session_id: str, agent_id: str
) -> SessionAgentState | None:
    row = conn.execute(
        STATE_SQL + " WHERE sa.session_id = ? AND sa.agent_id = ?", (session_id, agent_id)
    ).fetchone()
    return None if row is None else state_from_row(row)


def list_cold_sessions_q(
    conn: sqlite3.Connection,
    idle_before: datetime,
    min_messages: int,
    min_weighted_tokens: float,
    after: tuple[datetime, str, str] | None,
    limit: int,
) -> list[SessionAgentState]:
    after_at, after_session, after_agent = (
        (_BEFORE_ALL, "", "") if after is None else (to_us(after[0]), after[1], after[2])
    )
    rows = conn.execute(
        COLD_SESSIONS_SQL,
        {
            "idle_before": to_us(idle_before),
            "min_messages": min_messages,
            "min_tokens": min_weighted_tokens,
            "after_at": after_at,
            "after_session": after_session,
            "after_agent": after_agent,
            "limit": limit,
        },
    ).fetchall()
    return [state_from_row(row) for row in rows]


def purge_ended_sessions_tx(
    conn: sqlite3.Connection, ended_before: datetime, limit: int
) -> list[str]:
    ids = [
        str(row[0])
        for row in conn.execute(
            "SELECT session_id FROM sessions "
            "WHERE ended_at IS NOT NULL AND NOT purged AND ended_at < ? "
            "ORDER BY ended_at, session_id LIMIT ?",
            (to_us(ended_before), limit),
        )
    ]
    for session_id in ids:
        conn.execute(
            "DELETE FROM reflections WHERE session_id = ? AND scope = 'session'", (session_id,)
        )
        conn.execute(
            "DELETE FROM consolidated WHERE session_id = ? AND scope = 'session'", (session_id,)
        )
        conn.execute("UPDATE sessions SET purged = 1 WHERE session_id = ?", (session_id,))
    return ids
