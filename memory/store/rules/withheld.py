"""Withheld messages: what a forget of a user under some agents keeps, in a session those agents
share with others, for the others only.

Agents with separate backends may record into one session (a group chat). A newcomer joins at
the session's head (rules.messages), so every message after an agent's cursor was recorded after
it joined: it heard it. Another agent ``o`` still *holds* a user's message when ``o`` recorded it
(its record: export's recorded_by), or has not formed it yet (its seq is above o's cursor), and
it is not withheld from ``o`` (below). A message stored without its recorder (older rows) is
held by each other agent it is not withheld from: it may be theirs (as export's recorded_by
judges it), and a forget never destroys what another agent may hold.

A forget of the user under agent A (not every agent: that one deletes all of the user's
messages, as before) deletes the user's messages of a shared session that no other agent
holds; the rest stay, and A never forms them: its state (SessionAgentState.withheld) takes the
bound ``{user: session's last seq}``, "the user's messages up to this seq are not this agent's
to form", in the forget's transaction. Every reader of a formation range honours it (the
window's size cut and its transcript, memory/pipeline; re-forming a degraded window reads the
same transcript), the agent's pending counters leave them out (the forget's recount, a
formation's commit), and so do A's export and the memory page's sources. A no longer counts
the user among its participants; the session still does (the others' messages of theirs stay).
In a session the user was alone in, the agents' replies another agent keeps (their side of the
user's conversation, rules.erasure._replies_gone) are withheld from A the same way, under the
key ``REPLIES``.

Why in the (session, agent) state rather than the erasure tombstone: every formation range is
read after the state (its cursor), the pending counters it must correct are the state's, and
it goes with the session when the session is deleted; a tombstone is per (agent, user), and
each window would read one for every user of its messages. Rows stored before read as nothing
withheld. The bound only grows; the user's new messages (seqs above it) are formed as usual.
The field is the store's own: never serialized (API responses, workflow payloads), and stored
by SetWithheld only (a MoveCursor never writes it: no stale copy overwrites a forget's).

An export travels with it per message: a message line names the agents it is withheld from
(``withheld_from``), and an import of the file (rules.import_sessions) merges the bounds those
give (``file_bounds``) into the agents' own, never lowering one (``merged``), so that a migration
or a restore does not undo the forget under A.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from memory.models import SessionAgentState, StoredMessage

Withheld = Mapping[str, int]  # user -> the highest seq of theirs not to form
# The key of the messages carrying no user id (the agents' replies): a forget under A in a
# session the user was alone in withholds A's side of the conversation another agent keeps, as
# it withholds the user's words (h229 D9). No user id is empty (memory.models' ids).
REPLIES: Final = ""


@dataclass(frozen=True)
class MessageMark:
    """One stored message a forget decides on, without its content."""

    seq: int
    agent_id: str | None  # the agent that recorded it; None for rows stored before
    weighted_tokens: float
    user_id: str | None = None  # None: an agent's reply, or a guest's words
    role: str = ""
    message_id: str = ""


def key_of(user_id: str | None) -> str:
    """The key a message's bound is kept under: its user's, ``REPLIES`` without one."""
    return REPLIES if user_id is None else user_id


def is_withheld(user_id: str | None, seq: int, withheld: Withheld) -> bool:
    return seq <= withheld.get(key_of(user_id), 0)


def formable(messages: Iterable[StoredMessage], withheld: Withheld) -> list[StoredMessage]:
    """The messages the agent may form (or show as its own), of those given."""
    return [m for m in messages if not is_withheld(m.user_id, m.seq, withheld)]


def bounds_after(withheld: Withheld, seq: int) -> tuple[tuple[str, int], ...]:
    """The (user, bound) pairs a read of the messages after ``seq`` leaves out (user_id = user
    and seq <= bound); bounds at or below ``seq`` concern none of them."""
    return tuple(sorted((user, bound) for user, bound in withheld.items() if bound > seq))


def holds(state: SessionAgentState, user_id: str, mark: MessageMark) -> bool:
    """Whether the agent still holds the user's message (the module's rule)."""
    if is_withheld(user_id, mark.seq, state.withheld):
        return False
    return mark.agent_id in (None, state.agent_id) or mark.seq > state.cursor_seq


def kept_for_others(
    user_id: str, agent_id: str, states: Iterable[SessionAgentState], marks: Sequence[MessageMark]
) -> tuple[MessageMark, ...]:
    """Of the user's messages of a session, those an agent other than ``agent_id`` holds."""
    others = [s for s in states if s.agent_id != agent_id]
    return tuple(m for m in marks if any(holds(o, user_id, m) for o in others))


def withhold(withheld: Withheld, user_id: str, upto_seq: int) -> dict[str, int]:
    """The map with the user's bound raised to ``upto_seq`` (never lowered)."""
    return {**withheld, user_id: max(withheld.get(user_id, 0), upto_seq)}


def pending_of(
    state: SessionAgentState,
    others: tuple[int, float],
    user_id: str,
    kept: Iterable[MessageMark],
    withheld: Withheld,
) -> SessionAgentState:
    """The state with its pending counters once a forget has run: ``others`` (count, weighted
    tokens) of the messages after its cursor not the user's nor withheld from it, plus the
    user's kept messages after its cursor that ``withheld`` (its map after the forget) leaves
    to it."""
    mine = [
        m for m in kept if m.seq > state.cursor_seq and not is_withheld(user_id, m.seq, withheld)
    ]
    count, tokens = others
    update = {
        "pending_messages": count + len(mine),
        "pending_weighted_tokens": max(0.0, tokens + sum(m.weighted_tokens for m in mine)),
    }
    return state.model_copy(update=update)


# ---------------------------------------------------------------- in an export file


def withheld_from(message: StoredMessage, agents: Mapping[str, Withheld]) -> tuple[str, ...]:
    """The agents (of ``agents``: each one's map) the message is withheld from: what an export
    line carries so that an import withholds it again (``file_bounds``)."""
    return tuple(
        sorted(a for a, w in agents.items() if is_withheld(message.user_id, message.seq, w))
    )


def file_bounds(
    marked: Iterable[tuple[StoredMessage, Iterable[str]]],
) -> dict[str, dict[str, dict[str, int]]]:
    """{session: {agent: {user: bound}}} from messages and the agents each is withheld from: the
    bound is the user's highest seq withheld from the agent. Every message of the user up to the
    exporting store's bound is in the file with its mark (or was deleted), so this bound withholds
    the same messages; it is no higher, since the importing store's head may be lower than the
    exporting one's (the user's new messages there are not withheld)."""
    bounds: dict[str, dict[str, dict[str, int]]] = {}
    for m, agents in marked:
        for agent in agents:
            mine = bounds.setdefault(m.session_id, {}).setdefault(agent, {})
            mine.update(withhold(mine, key_of(m.user_id), m.seq))
    return bounds


def merged(withheld: Withheld, other: Withheld) -> dict[str, int]:
    """Both maps in one, each user's higher bound: a merge never weakens a withholding."""
    out = dict(withheld)
    for user_id, seq in other.items():
        out = withhold(out, user_id, seq)
    return out


# ---------------------------------------------------------------- stored form


def stored(withheld: Withheld) -> str:
    """As stored: JSON [[user, seq], ...] (a document key may not hold every id's characters)."""
    return json.dumps([[user, seq] for user, seq in sorted(withheld.items())])


def parsed(value: Any) -> dict[str, int]:
    """The map from its stored form (JSON text, or the list itself); none stored: empty."""
    if value is None or value == "":
        return {}
    pairs = json.loads(value) if isinstance(value, str | bytes) else value
    return {str(user): int(seq) for user, seq in pairs}
