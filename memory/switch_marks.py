"""The memory switches a message was recorded under: the one place of the rule that an agent's
switches (``AgentConfig.user_memory_enabled`` and ``agent_memory_enabled``) govern what is said
while they hold, not what a formation running later happens to find.

An operator turns an agent's user memory off, a user tells her email meanwhile, and the operator
turns it on again before the session forms (it forms at a threshold, at its end or when idle, so
hours later): read at formation time, the switch would make what she said while it was off her
user memory. The other way round, what she said while it was on would be lost for good to a
moment's switch-off (the cursor moves past it).

So each (session, agent) state keeps the switches of the agent its messages were recorded under
(``SessionAgentState.switch_marks`` and ``recorded_under``, the store's own fields, like
``withheld``): a recording reads the switches of every agent of the session in its transaction
(they all hear the new messages), and where an agent's differ from those its state's last
messages were recorded under, it closes that stretch with a mark ``(seq, user, agent)``, "the
messages after the previous mark up to this seq were recorded under these switches", and opens
one under the new switches (``recorded``). A change of a switch itself writes only the agent:
nothing to do for its sessions however many, and a session with no message since has no
stretch to close.

A formation window never spans a mark (``window_end``), like it never spans the moment a
session became a group (memory/group_start.py), and its scopes are those of the switches its
messages were recorded under (``as_recorded``), read from the state alone; a re-formed window
too, formed long ago or not. The marks only change where messages are recorded, after every
window of the state's messages, so a window loaded again after a failed attempt is the same
window.

Marks are few: one per change of a switch with messages recorded on both sides, so never more
than the session's messages; they go with the session when it is deleted. A state recorded into
before has no open stretch, nor has one a previous version records into during a rolling upgrade
(it keeps no marks), nor one an import creates from a file that does not name their switches
(other sources, mnemos exports before version 3): while it has messages to form, every start
opens its stretch under its agent's switches then (``opened``). Until then its messages count
as recorded under the switches of its next recording, or of the agent at formation time.

An export names, on each message line, the switches each agent recorded it under where known
(``recorded_at``), formed or not (a copy an older file reached still has it to form), and an
import makes
them marks (``of_messages``) merged into the agents' own (``merged``): a session moved with
messages still to form forms them under the switches they were said under, not those of the
store it lands in.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from memory.models import AgentConfig, SessionAgentState

type Switches = tuple[bool, bool]  # (user memory on, agent memory on)
# (seq, user memory on, agent memory on), in ascending seqs: the messages after the previous
# mark up to seq were recorded under these switches.
type SwitchMark = tuple[int, bool, bool]
type SwitchMarks = tuple[SwitchMark, ...]


def switches(agent: AgentConfig) -> Switches:
    return agent.user_memory_enabled, agent.agent_memory_enabled


def recorded(state: SessionAgentState, now: Switches) -> tuple[SwitchMarks, Switches] | None:
    """The state's marks and open switches once messages are recorded after its last one
    (``state.last_seq``, the session's head before them) under the switches ``now``; None when
    they stay as they are."""
    if state.recorded_under == now:
        return None
    marks = state.switch_marks
    open_since = marks[-1][0] if marks else 0
    if state.recorded_under is not None and state.last_seq > open_since:
        marks = (*marks, (state.last_seq, *state.recorded_under))
    return marks, now


def window_end(after_seq: int, upto_seq: int, marks: SwitchMarks) -> int:
    """The last message of a window (after_seq, upto_seq]: the first mark inside it, if any."""
    return next((seq for seq, _, _ in marks if after_seq < seq < upto_seq), upto_seq)


def as_recorded(agent: AgentConfig, state: SessionAgentState, upto_seq: int) -> AgentConfig:
    """The agent with the switches a window of ``state`` whose last message is ``upto_seq`` (and
    which spans no mark) was recorded under: the first mark at or after it, else the open
    stretch's, else (recorded before they were kept) the agent's own."""
    found = recorded_at(state, upto_seq)
    if found is None:
        return agent
    user, agent_memory = found
    return agent.model_copy(
        update={"user_memory_enabled": user, "agent_memory_enabled": agent_memory}
    )


def recorded_at(state: SessionAgentState, seq: int) -> Switches | None:
    """The switches the state's message ``seq`` was recorded under: the first mark at or after
    it, else the open stretch's; None, not known (recorded before they were kept)."""
    return next((m[1:] for m in state.switch_marks if m[0] >= seq), state.recorded_under)


def of_messages(recorded: Mapping[int, Switches]) -> SwitchMarks:
    """The marks of messages whose switches are known one by one ({seq: switches}, an export's):
    one at the last message of each run recorded under the same switches."""
    return _closing([(seq, *recorded[seq]) for seq in sorted(recorded)])


def merged(own: SwitchMarks, other: SwitchMarks) -> SwitchMarks:
    """``own`` with the marks of ``other`` at the seqs it has none at: a store keeps its own, an
    import adds what the file knows and it does not (so the same file twice changes nothing)."""
    by_seq = {m[0]: m for m in other} | {m[0]: m for m in own}
    return _closing([by_seq[seq] for seq in sorted(by_seq)])


def _closing(marks: list[SwitchMark]) -> SwitchMarks:
    """Of marks in ascending seqs, those followed by one under other switches, and the last: a
    mark followed by one under the same switches closes no stretch of its own (both are one)."""
    closing = [m for m, after in itertools.pairwise(marks) if after[1:] != m[1:]]
    return (*closing, *marks[-1:])


def parsed(raw: object) -> tuple[SwitchMarks, Switches | None]:
    """(marks, open switches) as stored: JSON text in the SQL backends, a list in MongoDB, the
    marks then the open stretch's switches under a null seq; nothing for rows stored before."""
    items: Any = json.loads(raw) if isinstance(raw, str) else (raw or ())
    marks = tuple((int(s), bool(u), bool(a)) for s, u, a in items if s is not None)
    opened = [(bool(u), bool(a)) for s, u, a in items if s is None]
    return marks, (opened[-1] if opened else None)


def dumped(marks: SwitchMarks, recorded_under: Switches | None) -> list[list[Any]]:
    items: list[list[Any]] = [[seq, user, agent] for seq, user, agent in marks]
    return items + ([[None, *recorded_under]] if recorded_under is not None else [])


def opened(agent: AgentConfig) -> list[Any]:
    """The stored open stretch (``dumped``'s last item) of a state with messages to form and no
    open stretch, under its agent's switches now: recorded into before the switches were kept,
    or by a process of the previous version during the roll (the README asks for no switch
    change meanwhile), or imported from a file that does not name them (a version 2 file, also
    after a version 3 one left marks: those stay, the stretch opens after the last). Every setup
    appends it to such states (store.planned_lifecycle's _upgrade_at_start), so a change made
    after the roll no longer reaches back to them at formation time. A state whose marks cover
    its last message gets it too, harmlessly: it covers no message until the next recording,
    which keeps it when its switches are the same and closes nothing when not."""
    return [None, *switches(agent)]
