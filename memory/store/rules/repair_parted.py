"""The repair, at every start, of the sessions a forget under one agent left without their user
before be4b748 (h229 D1, h234 D2).

Then, a forget of a user under agent A, in a session the user was alone in that stays for
another agent B (B recorded a reply there), deleted the user's messages and the user's place
among the session's users, and set A no bound. B's reply, which quotes the user ("I'm sorry you
were diagnosed with HIV last week"), stayed in a session of nobody: no later forget of the user,
under B or under every agent, and no export of the user found it again. Today's forget keeps the
user among the session's users and raises A's bounds to its head (rules.erasure._user_messages).

Such a session is told by what it holds: messages, no user and no guest, and the session
tombstone A's forget left (rules.erasure.session_tombstones: an erasure row keyed by A's
session scope key, ``session:{agent}:{session}``) of exactly one user. The repair makes it what
today's forget leaves: the user back among the session's users (among no agent's participants:
who heard them went with their messages); each forgetting agent's bound for the user (and for the
replies, where every message is one) at the session's head, its cursor there, nothing pending.
B's forget then finds the session and takes its reply and memory; the last forget takes the
session whole (rules.erasure._emptied).

Left as they are, each for its reason:
- a session with a guest (one who spoke after the old forget): no forget takes a session a guest
  is in, nor the replies they heard (alone_in), so the user back would take nothing more, and
  would list a conversation of someone else in the user's export;
- a session whose user is still there: a forget of today's kind, or none, ran in it;
- a session with the tombstones of two users or more: whose words the replies answer cannot be
  told, and all of them back would make it a group chat (user memory off for every agent there,
  and the forget of each would take neither the session nor its replies);
- a tombstone older than the session: it is of an earlier life of the session id (a session
  erased whole, then recorded again under its id, by agents alone);
- a session no agent but the forgetting ones recorded in: the old forget left none such (it
  deleted the session whole), so it is a later life of the id, though an import dates it by its
  file, before the forget (h239 D1).

It runs at every start, like the guests' marks: a repaired session has its user again, so it is
not found again (idempotent), and a forget that a worker of the previous version runs during a
rolling upgrade is repaired at the next start. It finds them by one read the database answers
(snapshots_lifecycle.LifecycleReads.parted_candidates): the sessions without people a session
tombstone of one of their agents names, walked from the tombstones, each session probed by its
key. A store that forgot no one in a session reads no row, whatever sessions of nobody (agents
alone) it holds; one that forgot many has the database walk its tombstones at each start, none
read into the process (h248: 0.21 s at 200k on SQLite with nothing to repair, 1.76 s before).

A later forget is honoured (``later_forget``): a forget of the user that ran after the old one
and before the repair found no session (the user was no longer among its users), yet the user
had asked for it to go. Where that forget would have taken the session whole had it found it,
the repair takes it whole instead of putting the user back: a forget under every agent (it takes
every session the user was alone in), or a forget under each other agent of the session (the
last of them empties it, rules.erasure._emptied). Only where every message of the session is
older than that forget: a message said after it is not what it was asked to take, and the
session is only repaired, as when no later forget ran; its next forget takes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from memory.models import ScopeKey, SessionAgentState
from memory.store.rules.erasure import ALL_AGENTS, session_tombstones, take_whole
from memory.store.rules.lifecycle_writes import DeleteUserMessages, SetWithheld
from memory.store.rules.withheld import REPLIES, withhold
from memory.store.rules.writes import (
    AddSessionUsers,
    BumpScopeVersions,
    MoveCursor,
    Plan,
    Request,
    Write,
)

Mark = tuple[int, datetime]  # an erasure row's epoch and the time of its last forget


@dataclass(frozen=True)
class Tombstone:
    """A session tombstone: the erasure row of a session scope key and a user."""

    key: str
    user_id: str
    forgotten_at: datetime


@dataclass(frozen=True)
class PartedSession:
    session_id: str
    created_at: datetime
    users: tuple[str, ...]
    guests: bool
    last_seq: int
    messages: int
    replies: int  # of its messages, those carrying no user id that are no guest's
    states: tuple[SessionAgentState, ...]
    tombstones: tuple[Tombstone, ...]  # of its agents' session scope keys
    # The session's last message time: the latest created_at it ever held (record_messages).
    last_message_at: datetime | None = None
    # The erasure rows (agent key, user) of its tombstones' users, under every agent ("*") and
    # under each of its agents: the forgets of them, the last of each key.
    forgets: Mapping[tuple[str, str], Mark] = field(default_factory=dict)


@dataclass(frozen=True)
class PartedRequest(Request[PartedSession | None]):
    """A session found without people (snapshots_lifecycle.parted_sessions), read again and
    decided in the repair's own transaction; None: it is gone."""

    session_id: str
    created_at: datetime
    user_id: str  # the one its tombstones named when it was found
    # Serialized on no key: what it decides on, a session without people, changes only by a
    # write of the session (a recording, an import), which its own write of the session meets;
    # and a key of the user would leave their id among MongoDB's serialization keys, which a
    # forget takes out (mongo.lifecycle_writes, PutErasure).


def session_keys(session_id: str, states: Sequence[SessionAgentState]) -> tuple[str, ...]:
    """The session scope keys of the session's agents: a forget under one of them left its
    tombstone under one of these."""
    return tuple(ScopeKey.session(s.agent_id, session_id).key for s in states)


def scope_of(key: str) -> tuple[str, str]:
    """(the agent whose forget left it, the session) of a session tombstone's key, made
    ``session:{agent}:{session}`` (models.ScopeKey.key); no id holds a colon (models.Id)."""
    _, agent_id, session_id = key.split(":", 2)
    return agent_id, session_id


def forgotten(s: PartedSession) -> tuple[str, tuple[str, ...]] | None:
    """(the user, the agents whose forget of them left the session without them), or None where
    the session is none of those the old forget left (the module's list)."""
    if s.users or s.guests or not s.messages:
        return None
    # A tombstone older than the session is of an earlier life of its id.
    live = [t for t in s.tombstones if t.forgotten_at >= s.created_at]
    if len({t.user_id for t in live}) != 1:
        return None
    agents = {scope_of(t.key)[0] for t in live}
    forgetting = tuple(st.agent_id for st in s.states if st.agent_id in agents)
    # The old forget left a session only where it stayed for another agent (one that recorded
    # there): of the forgetting agents' alone, it deleted the session whole. Such a session is
    # of a later life of the id (recorded or imported again, an import dating it by its file),
    # not the user's: given the user back, it would be listed as theirs, its messages never
    # formed (h239 D1).
    if not forgetting or len(forgetting) == len(s.states):
        return None
    return live[0].user_id, forgetting


def later_forget(s: PartedSession, user_id: str, agents: Sequence[str]) -> Mark | None:
    """The erasure row (epoch, time) of a forget of the user, later than the old one (``agents``'
    forgets), that would have taken the session whole had it found it; None: no such forget.

    Said "before" by time alone: an erasure row keeps the time of its key's last forget, a
    session the latest created_at it ever held (last_message_at). A created_at is the said time,
    clamped to the recording time (record_messages, input_rules.said_when_recorded), so it is
    never later than the recording: a message whose created_at is not before the forget was
    surely recorded after it (or at once), and keeps the session. What it cannot tell: a message
    recorded after the forget but said before it (a sender's own time, a later import of an
    older conversation) counts as before, and goes with the session; nor a skew between the
    clock that recorded and the one the forget was given (its ``at``). Nor does it tell apart
    messages the old forget deleted: last_message_at counts them too, which only ever keeps a
    session (theirs is older than the old forget, so than the later one)."""
    parted_at = max(
        t.forgotten_at
        for t in s.tombstones
        if t.user_id == user_id and t.forgotten_at >= s.created_at
    )

    def after(key: str) -> Mark | None:
        mark = s.forgets.get((key, user_id))
        return mark if mark is not None and mark[1] > parted_at else None

    # (the forget replayed, the time every message must be before)
    found: list[tuple[Mark, datetime]] = []
    if (every := after(ALL_AGENTS)) is not None:
        # Under every agent: it takes every session the user was alone in (plan_forget).
        found.append((every, every[1]))
    others = [st.agent_id for st in s.states if st.agent_id not in agents]
    marks = [m for a in others if (m := after(a)) is not None]
    if others and len(marks) == len(others) and s.messages == s.replies:
        # Under each other agent: the last of them found every other one's bound at the head
        # (_emptied; the forgetting agents' the repair sets), so every message a reply that no
        # agent holds any more. Each forget bounds what was said before it: every message must
        # be older than the first of them.
        found.append((max(marks, key=lambda m: m[1]), min(m[1] for m in marks)))
    for mark, bound in found:
        if s.last_message_at is not None and s.last_message_at < bound:
            return mark
    return None


def _taken(s: PartedSession, user_id: str, mark: Mark) -> Plan[int]:
    """What the later forget would have written of the session: the session whole, by
    rules.erasure's own write; the session tombstones of the memory it deletes, as of that
    forget (an import never brings that memory back: rules.imports._gone). Not its counts nor
    an epoch: the forget wrote its own erasure row (its counts, what it told its caller, stay
    what it did), and no formation holds an epoch of the user for a session without users: one
    of it running meanwhile meets the scope versions bumped here, then finds its state gone
    (rules.checks.check_cursor)."""
    taken, memory = take_whole([(s.session_id, [st.agent_id for st in s.states])])
    epoch, at = mark
    keys = tuple(sorted(memory))
    writes: list[Write] = [taken, *session_tombstones(user_id, keys, epoch, at)]
    writes.append(BumpScopeVersions(keys))
    return Plan(tuple(writes), 1)


def plan_repair(req: PartedRequest, s: PartedSession | None) -> Plan[int]:
    """The writes today's forget would have left (rules.erasure._user_messages with keep_user),
    or those of the later forget that would have taken the session whole (``later_forget``);
    the result: how many sessions were repaired (0 or 1)."""
    found = None if s is None else forgotten(s)
    if s is None or found is None or found[0] != req.user_id or not found[1]:
        return Plan((), 0)
    user_id, agents = found
    if (mark := later_forget(s, user_id, agents)) is not None:
        return _taken(s, user_id, mark)
    writes: list[Write] = [
        AddSessionUsers(s.session_id, (user_id,)),
        # Among no agent's participants (who spoke to it): the forgetting agents' are left
        # without the user as by today's forget, and which other agent heard the user went with
        # the user's messages (one that joined after them, as in h229 D1, never counted them).
        # So no agent forms the user's memory of the session again. Deletes no message; the
        # reasons of the session's degraded windows are erased again, as by the forget.
        DeleteUserMessages(
            s.session_id, user_id, seqs=(), agents=tuple(a.agent_id for a in s.states)
        ),
    ]
    for state in s.states:
        if state.agent_id not in agents:
            continue
        withheld = withhold(state.withheld, user_id, s.last_seq)
        if s.messages == s.replies:
            # As the forget: not where a message is a guest's an older process left unmarked.
            withheld = withhold(withheld, REPLIES, s.last_seq)
        writes.append(SetWithheld(s.session_id, state.agent_id, tuple(sorted(withheld.items()))))
        head = max(state.cursor_seq, s.last_seq)
        update = {"cursor_seq": head, "pending_messages": 0, "pending_weighted_tokens": 0.0}
        writes.append(MoveCursor(state.model_copy(update=update)))
    return Plan(tuple(writes), 1)
