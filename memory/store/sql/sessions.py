"""The SQL of sessions in both backends: an agent's view of a session, the cold-sessions scan, the
ends the cold job finishes, the memory page's listings of an agent's users and sessions, and the
setup's marking of guests and open switch stretches (memory.store.sql.store, .manage)."""

from __future__ import annotations

from memory.models import SessionInfo
from memory.store.records import session_of
from memory.store.sql.db import Db

STATE_SQL = """
SELECT sa.session_id, sa.agent_id, sa.cursor_seq, s.last_seq, sa.pending_messages,
       sa.pending_weighted_tokens, sa.last_message_at, sa.formations, sa.withheld,
       sa.switch_marks
FROM session_agents AS sa JOIN sessions AS s ON s.session_id = sa.session_id
"""

# The WHERE term `pending_messages > 0` repeats the partial index's, which lets the planner use
# it; the row value comparison makes the page boundary part of the index range (the first page
# starts below every stored timestamp: Db.min_time).
COLD_SESSIONS_SQL = (
    STATE_SQL
    + """
WHERE sa.pending_messages > 0
  AND sa.last_message_at <= %(idle_before)s
  AND (sa.pending_messages >= %(min_messages)s OR sa.pending_weighted_tokens >= %(min_tokens)s
       OR sa.last_message_at <= %(rest_before)s)
  AND (sa.last_message_at, sa.session_id, sa.agent_id)
      > (%(after_at)s, %(after_session)s, %(after_agent)s)
ORDER BY sa.last_message_at, sa.session_id, sa.agent_id
LIMIT %(limit)s
"""
)

# Ended (session, agent) pairs with memory still to form: pending messages or buffered session
# reflections. Ending is each agent's own. Quiet since the cut too: recording into an ended session
# does not clear its end, and a session resumed and still talked in is hot, not an end to finish
# (it is finished once it goes quiet).
UNFINISHED_ENDED_SQL = """
SELECT u.session_id, u.agent_id FROM (
    SELECT session_id, agent_id FROM reflections
    WHERE scope = 'session' AND absorbed_into_version IS NULL
    UNION SELECT session_id, agent_id FROM session_agents WHERE pending_messages > 0
) AS u JOIN session_agents AS sa ON sa.session_id = u.session_id AND sa.agent_id = u.agent_id
WHERE sa.ended_at IS NOT NULL AND sa.ended_at <= %(cut)s
  AND (sa.last_message_at IS NULL OR sa.last_message_at <= %(cut)s)
  AND (u.session_id, u.agent_id) > (%(after_session)s, %(after_agent)s)
ORDER BY u.session_id, u.agent_id LIMIT %(limit)s
"""

# A session's activity: its last message, else its creation.
_ACTIVE = "coalesce(s.last_message_at, s.created_at)"

# The agent's own participants (isolation): a user who spoke in a shared session before this
# agent joined is another agent's business, not listed here.
USERS_SQL = f"""
SELECT su.user_id, count(*) AS sessions, max({_ACTIVE}) AS last_active_at
FROM session_agents AS sa
JOIN sessions AS s ON s.session_id = sa.session_id
JOIN session_agent_users AS su ON su.session_id = sa.session_id AND su.agent_id = sa.agent_id
WHERE sa.agent_id = %s
GROUP BY su.user_id
ORDER BY last_active_at DESC, su.user_id
LIMIT %s
"""

SESSIONS_SQL = f"""
SELECT s.session_id FROM session_agents AS sa JOIN sessions AS s ON s.session_id = sa.session_id
WHERE sa.agent_id = %(agent_id)s
  AND (CAST(%(user_id)s AS TEXT) IS NULL OR EXISTS (
      SELECT 1 FROM session_agent_users AS su
      WHERE su.session_id = s.session_id AND su.agent_id = %(agent_id)s
        AND su.user_id = %(user_id)s
  ))
ORDER BY {_ACTIVE} DESC, s.session_id
LIMIT %(limit)s
"""


# rules.derived.said_by_guest in SQL: a guest's message. The partial index messages_guests holds
# these only (the queries repeat its WHERE, so that the planner uses it): marking the sessions
# reads as many index entries as there are guests' messages, not the messages.
GUEST_MESSAGE_SQL = "role = 'user' AND user_id IS NULL"
GUESTS_INDEX_SQL = (
    f"CREATE INDEX IF NOT EXISTS messages_guests ON messages (session_id) WHERE {GUEST_MESSAGE_SQL}"
)

# The sessions holding a guest's message not marked yet, marked: at every setup, since a writer
# older than has_guests (a replica, or an application embedding the store, still running the
# previous version during a rolling upgrade) records guests without marking the session; the
# next start of anything of this version marks it. SQLite runs it whole in its setup
# transaction; PostgreSQL in batches, after the migrations' (postgres.guests.mark_guests).
GUESTS_BACKFILL_SQL = f"""
UPDATE sessions SET has_guests = true WHERE NOT has_guests AND session_id IN (
    SELECT session_id FROM messages WHERE {GUEST_MESSAGE_SQL}
)
"""

# memory.switch_marks.opened, in batches (an UPDATE of a few rows at a time: a busy PostgreSQL
# store's SERIALIZABLE recordings then rarely conflict with it): an agent's states with messages to
# form and no open stretch (no null seq in the JSON: among the partial index session_agents_cold's
# rows), their marks kept and the stretch appended (the JSON list's closing bracket replaced).
# Parameters: the stretch alone as JSON, the same after ", ", the agent, the pattern '%null%',
# the agent and the pattern again, the batch.
OPEN_UNMARKED_SQL = """
UPDATE session_agents SET switch_marks = CASE WHEN switch_marks = '[]' THEN '[' || %s || ']'
    ELSE substr(switch_marks, 1, length(switch_marks) - 1) || %s || ']' END
WHERE agent_id = %s AND switch_marks NOT LIKE %s
  AND session_id IN (
    SELECT session_id FROM session_agents
    WHERE agent_id = %s AND pending_messages > 0 AND switch_marks NOT LIKE %s LIMIT %s
  )
"""


# A batch of them: the next sessions to mark after a session id, in id order.
GUEST_SESSIONS_AFTER_SQL = f"""
SELECT DISTINCT m.session_id FROM messages AS m JOIN sessions AS s ON s.session_id = m.session_id
WHERE {GUEST_MESSAGE_SQL} AND NOT s.has_guests AND m.session_id > %s
ORDER BY m.session_id LIMIT %s
"""


async def session_view(db: Db, session_id: str, agent_id: str | None) -> SessionInfo | None:
    """The session with its agents and users in join order and whether a guest spoke; with
    ``agent_id``, that agent's view: only the users who spoke to it, and its own end (None if
    it is not in the session), the session's users and guests beside them. Three queries,
    whichever the view (every turn's context and search read the agent's)."""
    row = await db.fetch_one(
        "SELECT session_id, created_at, last_message_at, has_guests FROM sessions "
        "WHERE session_id = %s",
        (session_id,),
    )
    if row is None:
        return None
    agents = await db.fetch(
        f"SELECT agent_id, ended_at FROM session_agents WHERE session_id = %s ORDER BY {db.ord}",
        (session_id,),
    )
    # The session's users (mine = 0) and the agent's own (mine = 1; none without an agent), each
    # in join order, in one query.
    users = await db.fetch(
        f"SELECT user_id, 0 AS mine, {db.ord} AS o FROM session_users WHERE session_id = %s "
        f"UNION ALL SELECT user_id, 1 AS mine, {db.ord} AS o FROM session_agent_users "
        "WHERE session_id = %s AND agent_id = %s ORDER BY mine, o",
        (session_id, session_id, agent_id),
    )
    mine = next((a for a in agents if a["agent_id"] == agent_id), None)
    if agent_id is not None and mine is None:
        return None
    own = None if mine is None else (mine["ended_at"], [u["user_id"] for u in users if u["mine"]])
    everyone = [u["user_id"] for u in users if not u["mine"]]
    agent_ids = [a["agent_id"] for a in agents]
    return session_of(dict(row), db.time_of, everyone, own, agent_ids=agent_ids)
