"""export_data, once for every backend: what a backend read for an export (its queries) made
into the export by one rule (``export_view``): the messages withheld from the agent left out,
and of a user's export only what forget_user of that user erases (``users_export``).

A user's export holds what a forget of that user erases (rules.erasure.plan_forget) of the
agent's own, and nothing it keeps: the user's facts and user-scope memory, and of the sessions
holding their data, all of a session they are alone in (messages and session memory: forget
deletes it whole, or this agent's memory of it when another agent keeps it), only their own
messages of a shared one (with another user, or a guest). Of one agent, only the messages that agent recorded (recorded_by) and
does not withhold: in a session several agents share, what another agent's backend recorded
(before this agent joined, or after) is that agent's, and what a forget through this agent kept
there for the others (rules.withheld) is theirs only.

Every export carries the erasure tombstones that bind what it exports (those of its user, of
its agent: tombstone_of), so that a store moved by export and import never imports a forgotten
user again (rules.import_erasures.plan_import_erasures). An agent's export carries a forget of
every agent only for a user the agent had or has something of (a tombstone of its own, or their
data: ``unheld``): the ids of users forgotten by other agents are not the agent's to carry."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from memory.models import Fact, ScopeKey, StoredMessage
from memory.store.counts import ExportData
from memory.store.rules.erasure import ALL_AGENTS, alone_in, session_users
from memory.store.rules.withheld import Withheld, is_withheld

# Facts a page of an export reads (MemoryStore.export_facts): with their vectors about 4 MB of a
# 384-dimension model, converted in some 30 ms, so a store's other reads and the event loop get
# their turns between pages; the pages' round trips cost little beside it.
EXPORT_PAGE: Final = 500

Exported = tuple[Fact, list[float]]  # an exported fact, with its vector


def in_order(fact_ids: Sequence[str], read: Iterable[Exported]) -> list[Exported]:
    """The facts ``read`` in the order of ``fact_ids`` (MemoryStore.export_facts), those no
    longer stored left out: a backend reads them in any order."""
    by_id = {fact.fact_id: (fact, vector) for fact, vector in read}
    return [by_id[i] for i in dict.fromkeys(fact_ids) if i in by_id]


# (session id, id) rows as a backend reads them: a user id, or an agent id, of the session.
Pairs = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class UserSessions:
    """What a user's export reads of the sessions holding the user's data (those it read the
    messages and session memory of), as (session id, id) rows: their participants, the user ids
    their messages carry (message_users), their agents; and the ids of those a guest spoke in
    (SessionInfo.has_guests). A session without a row of a kind has none of it: one with no
    participant recorded (stored before every role made a participant) holds the users its
    messages name. A backend need read them only where judges_sessions says the answer depends
    on them, and the agents only where one of one agent's messages lacks its recorder:
    recorded_by consults them for nothing else."""

    participants: Pairs = ()
    message_users: Pairs = ()
    agents: Pairs = ()
    guests: Sequence[str] = ()


def by_session(pairs: Pairs) -> dict[str, list[str]]:
    """The ids of (session id, id) rows, by session."""
    ids: dict[str, list[str]] = {}
    for session_id, id_ in pairs:
        ids.setdefault(session_id, []).append(id_)
    return ids


def users_of_messages(messages: Iterable[StoredMessage]) -> Pairs:
    """UserSessions.message_users of an export that read every message of those sessions: their
    users are at hand, no second read needed. Take them before without_withheld drops any: a
    user whose words are withheld from the agent still shares the session, as forget judges it."""
    pairs = ((m.session_id, m.user_id) for m in messages if m.user_id is not None)
    return list(dict.fromkeys(pairs))


def judges_sessions(read: ExportData) -> bool:
    """Whether a user's export of ``read`` depends on which sessions the user is alone in
    (solo_sessions): it decides their messages and session memory only. Without either,
    UserSessions() gives the same answer, and the backend need not read the sessions."""
    keys = [r.scope_key for r in read.reflections] + [b.scope_key for b in read.consolidated]
    return bool(read.messages) or any(key.scope == "session" for key in keys)


def export_view(
    read: ExportData,
    withheld: Mapping[str, Withheld],
    *,
    agent_id: str | None,
    user_id: str | None,
    sessions: UserSessions,
) -> ExportData:
    """MemoryStore.export_data's answer from what a backend read for it: ``read`` (the agents,
    facts, reflections, blobs and, when asked, messages of the agent, or of every agent; with
    ``user_id``, the user's facts, the reflections and blobs of the user's scope and of the
    sessions holding their data, and those sessions' messages), ``withheld`` (by session, the
    agent's SessionAgentState.withheld; nothing for an export of every agent) and, with
    ``user_id``, the ``sessions`` holding the user's data: without the messages withheld from
    the agent (without_withheld), and of a user's export only what forget_user erases
    (users_export)."""
    data = without_withheld(read, withheld)
    if agent_id is not None:
        kept = [e for e in data.erasures if tombstone_of(agent_id, e.agent_key)]
        data = data.model_copy(update={"erasures": kept})
    if user_id is None:
        return data
    return users_export(user_id, data, sessions, agent_id=agent_id)


def tombstone_of(agent_id: str, agent_key: str) -> bool:
    """Whether an erasure tombstone (of ``agent_key``: rules.erasure) binds the agent, and so
    goes with its export: its own, the one for every agent, and those of its session memory
    ("session:agent:session", rules.erasure.session_tombstones)."""
    return agent_key in (agent_id, ALL_AGENTS) or agent_key.startswith(f"session:{agent_id}:")


def unheld(agent_id: str, data: ExportData) -> set[str]:
    """The users of the agent's export's every-agent tombstones with no tombstone of the agent's
    own: the export keeps theirs only where the agent holds something of them now (a user who
    came to it after the forget: its file must know that forget, rules.import_erasures)."""
    own = {e.user_id for e in data.erasures if e.agent_key != ALL_AGENTS}
    bound = (e for e in data.erasures if tombstone_of(agent_id, e.agent_key))
    return {e.user_id for e in bound if e.agent_key == ALL_AGENTS and e.user_id not in own}


def without_every_agent_forgets(data: ExportData, users: Collection[str]) -> ExportData:
    kept = [e for e in data.erasures if e.agent_key != ALL_AGENTS or e.user_id not in users]
    return data.model_copy(update={"erasures": kept})


def recorded_by(agent_id: str, message: StoredMessage, session_agents: Collection[str]) -> bool:
    """Whether the message is the agent's record: the agent recorded it. A message without its
    recorder (stored before messages kept it, or imported from an export of then) is the agent's
    only when the agent is its session's only agent: in a shared session it may be another's."""
    if message.agent_id is not None:
        return message.agent_id == agent_id
    return set(session_agents) == {agent_id}


def solo_sessions(
    user_id: str,
    participants: Mapping[str, Iterable[str]],
    message_users: Mapping[str, Iterable[str | None]],
    guests: Collection[str],
) -> frozenset[str]:
    """Of the sessions holding the user's data, those the user is alone in (alone_in, as
    plan_forget judges them). By session id: ``participants``, and ``message_users`` the user
    ids of their messages; a session in either mapping must hold the user's data (an empty one
    would count as theirs); ``guests``, the sessions a guest spoke in."""
    sessions = {*participants, *message_users}
    return frozenset(
        sid
        for sid in sessions
        if alone_in(
            user_id,
            session_users(participants.get(sid, ()), message_users.get(sid, ())),
            guests=sid in guests,
        )
    )


def _in_users_export(user_id: str, key: ScopeKey, solo: Collection[str]) -> bool:
    """Whether the reflections and blob of ``key`` are in the user's export (``solo``:
    solo_sessions): the user's scope, and the session memory of a session the user is alone in,
    which may quote them. A shared session's stays out, as forget keeps it for the others; the
    agent's own memory too."""
    match key.scope:
        case "user":
            return key.user_id == user_id
        case "session":
            return key.session_id in solo
        case "agent":
            return False


def users_export(
    user_id: str, read: ExportData, sessions: UserSessions, *, agent_id: str | None
) -> ExportData:
    """A user's export, from what a backend read for it (see export_view). Of the session
    memory it keeps that of the sessions the user is alone in; of the messages, those carrying
    the user's id, whatever the role, and all of a session they are alone in: in a shared one
    the agent's replies may carry other users' words. With ``agent_id`` (one agent's export), of
    those only the agent's records (recorded_by): another agent's backend recorded the rest, and
    what it heard is none of this agent's (an export for every agent keeps all)."""
    solo = solo_sessions(
        user_id,
        by_session(sessions.participants),
        by_session(sessions.message_users),
        frozenset(sessions.guests),
    )
    session_agents = by_session(sessions.agents)

    def kept(m: StoredMessage) -> bool:
        if m.user_id != user_id and m.session_id not in solo:
            return False
        return agent_id is None or recorded_by(agent_id, m, session_agents.get(m.session_id, ()))

    return read.model_copy(
        update={
            "reflections": [
                r for r in read.reflections if _in_users_export(user_id, r.scope_key, solo)
            ],
            "consolidated": [
                b for b in read.consolidated if _in_users_export(user_id, b.scope_key, solo)
            ],
            "messages": [m for m in read.messages if kept(m)],
        }
    )


def without_withheld(read: ExportData, withheld: Mapping[str, Withheld]) -> ExportData:
    """One agent's export (of a user or whole) without the messages withheld from it, by
    session (its SessionAgentState.withheld): a forget under it kept them for other agents."""
    kept = [
        m
        for m in read.messages
        if not is_withheld(m.user_id, m.seq, withheld.get(m.session_id, {}))
    ]
    return read.model_copy(update={"messages": kept})
