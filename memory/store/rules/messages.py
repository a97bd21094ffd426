"""record_messages, planned: idempotence by message id, seqs, membership and pending counters.

The rules: a call records at least one message (an empty batch is refused, nothing written: it
would create the session, or join the agent to it, with nothing said, as no door means to). The
messages not yet stored (by message id; a repeated id within the call is a duplicate
of its first occurrence) get the next seqs, in order. A message id names one message: an id the
session holds, or repeats within the call, with another content, role or user id is refused, the
whole call with it (a retry sends the same message; an edit, or another person's words under an id
numbered per user, is a new message, or it would be dropped unsaid). The
session exists with the calling agent among its agents. Each of the session's agents gets
pending_messages += 1 and pending_weighted_tokens += weight(role) * ceil(len(content) /
chars_per_token) per new message, and every user_id a new message carries, whatever its role,
among its participants (memory/speakers.py); a new user message without a user_id (a guest's)
marks the session as having guests (for all of its agents: the group-chat rule counts guests,
SessionInfo.is_group); last_message_at = max(created_at). A created_at ahead of the recording
time (``now``) is stored as ``now``, its offset kept (memory.input_rules.said_when_recorded). An
agent new to the session joins at its head (cursor = last_seq, nothing pending): it forms memory
only of what is said from then on.

A caller that acts for some agents only (an API key, ``mnemos mcp``) names them (``may_join``):
a session holding any other agent is refused as unknown (NotFoundError, nothing written), here,
on the snapshot of the transaction that writes, so that no check-then-write gap lets two keys
racing into a new session both in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

from memory import switch_marks
from memory.dates import offset_minutes
from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.input_rules import said_when_recorded
from memory.models import MessageIn, RecordOutcome, SessionAgentState, StoredMessage
from memory.speakers import participants
from memory.store.rules.derived import said_by_guest, weighted_tokens
from memory.store.rules.writes import (
    AddSessionAgent,
    AddSessionUsers,
    AdvanceSession,
    CreateSession,
    InsertMessages,
    MarkGuests,
    NewMessage,
    Plan,
    Request,
    SetSwitchMarks,
    Write,
)


class Said(NamedTuple):
    """What a message id names: who said what. A retry sends all of it again."""

    content: str
    role: str
    user_id: str | None


def said(message: MessageIn | StoredMessage) -> Said:
    return Said(message.content, message.role, message.user_id)


@dataclass(frozen=True)
class RecordSnapshot:
    session_exists: bool
    last_seq: int  # 0 for a new session
    last_message_at: datetime | None
    state: SessionAgentState | None  # the calling agent's
    stored: Mapping[str, Said]  # each of the call's message ids the session holds
    agent_ids: tuple[str, ...] = ()  # the session's agents, in join order
    states: tuple[SessionAgentState, ...] = ()  # theirs
    # The memory switches of the session's agents and the caller's now (memory/switch_marks.py);
    # an agent not registered has none.
    switches: Mapping[str, tuple[bool, bool]] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordRequest(Request[RecordSnapshot]):
    session_id: str
    agent_id: str
    message_ids: tuple[str, ...]  # distinct


def _switch_marks(snapshot: RecordSnapshot, caller: SessionAgentState) -> list[Write]:
    """Every agent of the session hears the new messages: where its switches now differ from
    those its state's last messages were recorded under, that stretch is closed by a mark."""
    joined = () if snapshot.state is not None else (caller,)
    writes: list[Write] = []
    for state in (*snapshot.states, *joined):
        now = snapshot.switches.get(state.agent_id)
        if now is not None and (changed := switch_marks.recorded(state, now)) is not None:
            writes.append(SetSwitchMarks(state.session_id, state.agent_id, *changed))
    return writes


def plan_record_messages(
    session_id: str,
    agent_id: str,
    messages: Sequence[MessageIn],
    *,
    weights: dict[str, float],
    chars_per_token: float,
    now: datetime,
    snapshot: RecordSnapshot,
    may_join: Collection[str] | None = None,
) -> Plan[RecordOutcome]:
    """Read ``RecordRequest(session_id, agent_id, distinct message ids)``'s snapshot."""
    if chars_per_token <= 0:
        raise InvalidInputError("chars_per_token must be > 0")
    if not messages:
        # Every door refuses it (HTTP's min_length=1, the MCP tools): here, for the Python client
        # and the CLI too, before a write could take the session id for an empty session.
        raise InvalidInputError("no messages to record: give at least one")
    if may_join is not None and not set(snapshot.agent_ids) <= set(may_join):
        raise NotFoundError(f"no session {session_id!r} for {_named(may_join)}")
    writes: list[Write] = []
    if not snapshot.session_exists:
        writes.append(CreateSession(session_id, now))
    state = snapshot.state
    if state is None:
        # A newcomer joins at the head: what others heard before it came is not its to remember.
        state = SessionAgentState(
            session_id=session_id, agent_id=agent_id, cursor_seq=snapshot.last_seq,
            last_seq=snapshot.last_seq, last_message_at=snapshot.last_message_at,
        )  # fmt: skip
        writes.append(AddSessionAgent(state))

    first: dict[str, MessageIn] = {}
    for message in messages:
        if said(first.setdefault(message.message_id, message)) != said(message):
            raise InvalidInputError(
                f"message id {message.message_id!r} appears twice with different contents, "
                "roles or user ids"
            )
    changed = [i for i, m in first.items() if snapshot.stored.get(i, said(m)) != said(m)]
    if changed:
        raise ConflictError(
            f"message id(s) {', '.join(map(repr, changed[:5]))} of session {session_id} already "
            "stored with another content, role or user id: a message id names one message "
            "(record an edit, or another speaker's words, as a new message)"
        )
    fresh = [m for m in first.values() if m.message_id not in snapshot.stored]
    if not fresh:
        return Plan(tuple(writes), RecordOutcome(inserted=0, duplicates=len(messages), state=state))

    new = tuple(
        NewMessage(
            _stored(session_id, agent_id, seq, m, now),
            weighted_tokens(m, weights, chars_per_token),
        )
        for seq, m in enumerate(fresh, start=snapshot.last_seq + 1)
    )
    writes.append(InsertMessages(new))
    users = participants(fresh)
    if users:
        writes.append(AddSessionUsers(session_id, users))
    if any(said_by_guest(m) for m in fresh):
        writes.append(MarkGuests(session_id))
    last_at = max(stored.message.created_at for stored in new)
    if snapshot.last_message_at is not None:
        last_at = max(last_at, snapshot.last_message_at)
    tokens = 0.0
    for stored in new:
        tokens += stored.weighted_tokens
    advance = AdvanceSession(session_id, snapshot.last_seq + len(new), last_at, len(new), tokens)
    writes.append(advance)
    writes += _switch_marks(snapshot, state)
    after = state.model_copy(
        update={
            "last_seq": advance.last_seq,
            "last_message_at": last_at,
            "pending_messages": state.pending_messages + len(new),
            "pending_weighted_tokens": max(0.0, state.pending_weighted_tokens + tokens),
        }
    )
    outcome = RecordOutcome(inserted=len(new), duplicates=len(messages) - len(new), state=after)
    return Plan(tuple(writes), outcome)


def _stored(session_id: str, agent_id: str, seq: int, m: MessageIn, now: datetime) -> StoredMessage:
    # The instant in UTC, as every store keeps it, and the offset it was sent with apart: the
    # speaker's local calendar, which relative dates count in (memory.dates.in_offset). Never
    # after the recording time, stored once: what was said is ordered and shown by it.
    said = said_when_recorded(m.created_at, now)
    return StoredMessage(
        session_id=session_id, seq=seq, message_id=m.message_id, role=m.role, content=m.content,
        created_at=said.astimezone(UTC), user_id=m.user_id, name=m.name,
        agent_id=agent_id, utc_offset_minutes=offset_minutes(m.created_at),
    )  # fmt: skip


def _named(agent_ids: Collection[str]) -> str:
    """The caller, by the agents it acts for (telling nothing of the session's)."""
    names = sorted(agent_ids)
    return f"agent {names[0]!r}" if len(names) == 1 else f"agents {', '.join(map(repr, names))}"
