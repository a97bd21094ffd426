"""The import of messages, planned (memory.store.rules.imports for the rest): one session's
messages by id with their seqs, never bringing back what forget_user deleted, nor showing an
agent what a forget under it withheld from it (rules.withheld), each still to form under the
memory switches it was recorded under where it comes from (memory/switch_marks.py)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory import switch_marks
from memory.models import SessionAgentState, StoredMessage
from memory.speakers import participants
from memory.store.counts import ImportCounts
from memory.store.rules.derived import said_by_guest
from memory.store.rules.erased_messages import (
    erased_message,
    gone_with_users,
    lone_user,
    whose,
)
from memory.store.rules.import_erasures import Known
from memory.store.rules.imports import Pair
from memory.store.rules.lifecycle_writes import DeleteUserMessages, SetSessionHead, SetWithheld
from memory.store.rules.withheld import Withheld, formable, is_withheld, merged
from memory.store.rules.writes import (
    AddSessionAgent,
    AddSessionUsers,
    CreateSession,
    InsertMessages,
    MarkGuests,
    MoveCursor,
    NewMessage,
    Plan,
    Request,
    SetSwitchMarks,
    Write,
    user_key,
)

# Imported messages count as formed (the cursor moves past them) unless the file says an agent
# had not formed them yet (``file_cursors``); their weighted tokens are only kept for pending
# recounts, at weight 1.
_CHARS_PER_TOKEN = 4.0


@dataclass(frozen=True)
class SessionImportSnapshot:
    exists: bool
    last_seq: int
    last_message_at: datetime | None
    user_ids: tuple[str, ...]
    states: Mapping[str, SessionAgentState]  # by agent
    stored: Mapping[str, int]  # message id -> seq, of the request's ids
    stored_all: tuple[int, float]  # (count, weighted tokens) of every stored message
    taken: frozenset[int]  # of the request's seqs, those held by a stored message
    # Effective erasure epochs of each agent (stored or the request's) with each user (stored
    # or the request's); (ALL_AGENTS, user) when there is no agent at all.
    epochs: Mapping[Pair, int]
    guests: bool = False  # a guest spoke in the stored session (SessionInfo.has_guests)


@dataclass(frozen=True)
class SessionImportRequest(Request[SessionImportSnapshot]):
    session_id: str
    agent_ids: tuple[str, ...]
    user_ids: tuple[str, ...]
    message_ids: tuple[str, ...]
    seqs: tuple[int, ...]
    max_seq: int
    # When the session was created where it comes from: a new session is created then, so that
    # the ids of the formations that read it (they name its incarnation by this time:
    # memory.ids.formation_id) still name it. None: at its first imported message's time.
    created_at: datetime | None = None
    # The file's withheld marks, (agent, user, bound) (rules.withheld.file_bounds): merged into
    # the agents' own, never lowering one.
    withheld: tuple[tuple[str, str, int], ...] = ()
    # The file's cursors, (agent, cursor) (``file_cursors``): the agent had not formed the file's
    # messages after it where they come from. An agent not named: all counted as formed.
    cursors: tuple[tuple[str, int], ...] = ()
    # The memory switches the agent recorded the file's message ``seq`` under where it comes
    # from, (agent, seq, user memory, agent memory) (``file_switches``): made marks merged into
    # the agent's own (memory/switch_marks.py). A message not named: not known.
    switches: tuple[tuple[str, int, bool, bool], ...] = ()
    # The tombstones the file carries (rules.import_erasures.unknown): those it knows of refuse
    # none of its records.
    known: Known = ()

    def serialized_on(self) -> tuple[str, ...]:
        # The file's users. Those the stored session holds are known only once read, but a
        # forget_user of one writes the session document, as an import inserting into it does.
        return tuple(map(user_key, self.user_ids))


def session_import_request(
    session_id: str,
    messages: Sequence[StoredMessage],
    created_at: datetime | None = None,
    withheld: Mapping[str, Withheld] | None = None,
    cursors: Mapping[str, int] | None = None,
    switches: Mapping[str, Mapping[int, switch_marks.Switches]] | None = None,
    known: Known = (),
) -> SessionImportRequest:
    """``withheld``: the file's marks of the session, {agent: {user: bound}}; ``cursors``: the
    file's cursors of the session, {agent: cursor} (``file_cursors``); ``switches``: the file's
    switches of the session's messages, {agent: {seq: switches}} (``file_switches``)."""
    return SessionImportRequest(
        session_id=session_id,
        agent_ids=tuple(dict.fromkeys(m.agent_id for m in messages if m.agent_id)),
        user_ids=participants(messages),
        message_ids=tuple(m.message_id for m in messages),
        seqs=tuple(m.seq for m in messages),
        max_seq=max(m.seq for m in messages),
        created_at=created_at,
        withheld=tuple(
            (agent, user, seq)
            for agent, bounds in sorted((withheld or {}).items())
            for user, seq in sorted(bounds.items())
        ),
        cursors=tuple(sorted((cursors or {}).items())),
        switches=tuple(
            (agent, seq, *under)
            for agent, recorded in sorted((switches or {}).items())
            for seq, under in sorted(recorded.items())
        ),
        known=known,
    )


def file_cursors(
    marked: Iterable[tuple[StoredMessage, Iterable[str]]],
) -> dict[str, dict[str, int]]:
    """{session: {agent: cursor}} from messages and the agents each was still to be formed for
    where it comes from (an export's ``pending_for``): the cursor is just before the first such
    message of the agent, as the exporting store's was (every message after a cursor is pending,
    so the file's messages before that one were formed)."""
    cursors: dict[str, dict[str, int]] = {}
    for m, agents in marked:
        for agent in agents:
            mine = cursors.setdefault(m.session_id, {})
            mine[agent] = min(m.seq - 1, mine.get(agent, m.seq))
    return cursors


def file_switches(
    marked: Iterable[tuple[StoredMessage, Mapping[str, switch_marks.Switches]]],
) -> dict[str, dict[str, dict[int, switch_marks.Switches]]]:
    """{session: {agent: {seq: switches}}} from messages and the memory switches each agent
    recorded each under where it comes from (an export's ``recorded_under``)."""
    switches: dict[str, dict[str, dict[int, switch_marks.Switches]]] = {}
    for m, under in marked:
        for agent, recorded in under.items():
            switches.setdefault(m.session_id, {}).setdefault(agent, {})[m.seq] = recorded
    return switches


def _marking(
    req: SessionImportRequest,
    states: Mapping[str, SessionAgentState],
    agents: Collection[str],
    kept: Collection[int],
) -> list[Write]:
    """The marks of the switches the file says each of the session's ``agents`` recorded its
    messages under (those ``kept``: stored or imported, not a forgotten user's), merged into the
    agent's own (switch_marks.merged: a store keeps its marks, so the same file twice changes
    nothing), written where they add to them; its open stretch stays as it is. A new agent (not
    in ``states``) has none of its own."""
    known: dict[str, dict[int, switch_marks.Switches]] = {}
    for agent, seq, user, memory in req.switches:
        if agent in agents and seq in kept:
            known.setdefault(agent, {})[seq] = (user, memory)
    writes: list[Write] = []
    for agent, recorded in known.items():
        state = states.get(agent)
        own = () if state is None else state.switch_marks
        marks = switch_marks.merged(own, switch_marks.of_messages(recorded))
        if marks != switch_marks.merged(own, ()):
            under = None if state is None else state.recorded_under
            writes.append(SetSwitchMarks(req.session_id, agent, marks, under))
    return writes


def _maps(
    req: SessionImportRequest, states: Mapping[str, SessionAgentState], agents: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Each agent's withheld map once the file's marks are merged into its own (never lower)."""
    marks: dict[str, dict[str, int]] = {}
    for agent, user, seq in req.withheld:
        marks.setdefault(agent, {})[user] = seq
    own = {a: states[a].withheld if a in states else {} for a in agents}
    return {a: merged(own[a], marks.get(a, {})) for a in agents}


def _withholding(
    session_id: str,
    states: Mapping[str, SessionAgentState],
    maps: Mapping[str, Withheld],
    kept: Sequence[StoredMessage],
    joining: Sequence[str],
) -> list[Write]:
    """The writes of the maps the file raises, as a forget under the agent makes them: its map,
    and a user whose every message of the session (``kept``: the file holds every stored one)
    it withholds is not among its participants (rules.withheld: the agent no longer counts the
    user; the session still does), where the import would add them (``joining``: the users of
    its messages) or the file newly withholds them. DeleteUserMessages with no seqs deletes no
    message: the participants only, and the reasons of the session's degraded windows, which
    may quote the user as the forget's did (a new session has none)."""
    writes: list[Write] = []
    changed: set[tuple[str, str]] = set()
    for agent, withheld in maps.items():
        own = states[agent].withheld if agent in states else {}
        if withheld != own:
            writes.append(SetWithheld(session_id, agent, tuple(sorted(withheld.items()))))
            changed |= {(agent, u) for u in withheld if withheld[u] != own.get(u)}
    for user in participants(kept):
        theirs = [m.seq for m in kept if m.user_id == user]
        out = tuple(
            agent
            for agent, withheld in maps.items()
            if (user in joining or (agent, user) in changed)
            and all(is_withheld(user, seq, withheld) for seq in theirs)
        )
        if out:
            writes.append(DeleteUserMessages(session_id, user, seqs=(), agents=out))
    return writes


def _tokens(message: StoredMessage) -> int:
    return math.ceil(len(message.content) / _CHARS_PER_TOKEN)


def _formed_upto(
    state: SessionAgentState,
    new: Sequence[StoredMessage],
    stored_seqs: Sequence[int],
    max_seq: int,
    file_cursor: int | None = None,
) -> MoveCursor | None:
    """The agent's cursor past the imported messages, which count as formed, but never past a
    stored message it has not formed yet, nor past one the file says it had not formed where it
    comes from (after ``file_cursor``; None: the file says nothing, all formed): that one, and
    everything after it, is formed as usual (the imported messages among them too: better formed
    twice, deduplicated, than never)."""
    unformed = [seq for seq in stored_seqs if seq > state.cursor_seq]
    unformed_there = [] if file_cursor is None else [m.seq for m in new if m.seq > file_cursor]
    if not unformed and not unformed_there:
        # Nothing stored after the cursor: nothing is pending once it passes the file's messages.
        cursor, pending, tokens = max(state.cursor_seq, max_seq), 0, 0.0
    else:
        first = min(unformed + unformed_there)
        cursor = max([state.cursor_seq, *(m.seq for m in new if m.seq < first)])
        after = [m for m in new if m.seq > cursor]
        # The state's pending are the stored ones after its cursor: none when nothing stored is.
        pending = (state.pending_messages if unformed else 0) + len(after)
        held = state.pending_weighted_tokens if unformed else 0.0
        tokens = held + sum(_tokens(m) for m in after)
    update = {"cursor_seq": cursor, "pending_messages": pending, "pending_weighted_tokens": tokens}
    if all(getattr(state, k) == v for k, v in update.items()):
        return None
    return MoveCursor(state.model_copy(update=update))


def plan_import_session(
    req: SessionImportRequest,
    messages: Sequence[StoredMessage],
    snapshot: SessionImportSnapshot,
) -> Plan[ImportCounts]:
    """One session's messages by (session, message id), seqs kept; the session, its agents and
    users created as needed; each agent's cursor moved past the imported messages so that the
    cold-sessions job does not form them a second time, but not past those the file says the
    agent had not formed yet (``req.cursors``): they stay pending, as where they come from.

    Never brings back what forget_user deleted: a session it deleted whole (its every user
    forgotten, ``gone_with_users``) is skipped whole, the agents' messages too; in another, a
    forgotten user's messages (``erased_message``: those a forget under their recorder took),
    and in a session that user was the one person of, the agents' replies too (``whose``). A stored
    session holding messages the file does not is another conversation under the same id (or
    has moved on since the export): the file's messages are conflicts and nothing is written,
    so that no agent's session gains users or loses unformed messages.

    The file's withheld marks (a forget under some agents kept a user's messages for the
    others) are merged into the agents' own maps, never lowering one, and such an agent does
    not count a user it withholds every message of among its participants (``_withholding``).
    The switches the file says each agent recorded its messages under (``req.switches``) are
    marks merged into the agent's own (``_marking``): those it still has to form form under
    them, not under the agent's switches here."""
    counts = ImportCounts()
    agents = tuple(dict.fromkeys((*snapshot.states, *req.agent_ids)))
    users = tuple(dict.fromkeys((*snapshot.user_ids, *req.user_ids)))
    gone = gone_with_users(snapshot.epochs, agents, users)
    disagree = snapshot.stored_all[0] > len(snapshot.stored)
    new: dict[str, StoredMessage] = {}
    seqs = set(snapshot.taken)
    alone = lone_user(users, snapshot.guests, messages)
    for m in sorted(messages, key=lambda m: m.seq):
        speaker = whose(m, alone)
        if m.message_id in snapshot.stored or m.message_id in new:
            counts.existing += 1
        elif gone or (speaker and erased_message(snapshot.epochs, agents, m, speaker)):
            counts.forgotten += 1
        elif disagree or m.seq in seqs:
            counts.conflict += 1
        else:
            seqs.add(m.seq)
            new[m.message_id] = m
    counts.inserted = len(new)
    # The session's messages once imported (the stored ones are the file's, or nothing is
    # written), for the file's withheld marks: merged into each agent's own (rules.withheld),
    # those of a session already imported too, as a forget under the agent makes them.
    by_id = {m.message_id: m for m in messages}
    kept = [m for i, m in by_id.items() if i in snapshot.stored or i in new]
    kept_seqs = {m.seq for m in kept}
    if not new:
        if gone or disagree:
            return Plan((), counts)
        maps = _maps(req, snapshot.states, tuple(snapshot.states))
        withholding = _withholding(req.session_id, snapshot.states, maps, kept, ())
        marking = _marking(req, snapshot.states, snapshot.states, kept_seqs)
        return Plan((*withholding, *marking), counts)
    maps = _maps(req, snapshot.states, agents)
    first = min(new.values(), key=lambda m: m.seq)
    last_at = max(m.created_at for m in new.values())
    head_at = (
        last_at if snapshot.last_message_at is None else max(last_at, snapshot.last_message_at)
    )
    head_seq = max(snapshot.last_seq, req.max_seq)
    writes: list[Write] = []
    if not snapshot.exists:
        writes.append(CreateSession(req.session_id, req.created_at or first.created_at))
    # Here the stored session holds no message the file does not: ``stored`` is all of them.
    stored_seqs = tuple(snapshot.stored.values())
    for agent_id in agents:
        state = snapshot.states.get(agent_id)
        if state is None:
            # A new agent has formed none of the stored messages: all are pending for it.
            state = SessionAgentState(
                session_id=req.session_id, agent_id=agent_id, cursor_seq=0, last_seq=head_seq,
                pending_messages=snapshot.stored_all[0],
                pending_weighted_tokens=snapshot.stored_all[1], last_message_at=head_at,
            )  # fmt: skip
            writes.append(AddSessionAgent(state))
        # Those withheld from it are not pending for it (as rules.erasure recounts them).
        mine = tuple(formable(new.values(), maps[agent_id]))
        there = dict(req.cursors).get(agent_id)
        if (move := _formed_upto(state, mine, stored_seqs, req.max_seq, there)) is not None:
            writes.append(move)
    # After the agents join (a new one's state is written first): the switches the file says
    # each recorded the messages under, so that those still to form form under them.
    writes += _marking(req, snapshot.states, agents, kept_seqs)
    # After the agents join: the users of the imported messages are the session's and each of its
    # agents' participants (the imported history is theirs), added once each.
    if new_users := participants(new.values()):
        writes.append(AddSessionUsers(req.session_id, new_users))
    writes.extend(_withholding(req.session_id, snapshot.states, maps, kept, new_users))
    if any(said_by_guest(m) for m in new.values()):  # a guest among them: as when recorded
        writes.append(MarkGuests(req.session_id))
    writes.append(InsertMessages(tuple(NewMessage(m, _tokens(m)) for m in new.values())))
    writes.append(SetSessionHead(req.session_id, head_seq, head_at))
    return Plan(tuple(writes), counts)
