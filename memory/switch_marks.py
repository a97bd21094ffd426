"""The memory switches a message was recorded under: the one place of the rule that an agent's
switches (``AgentConfig.user_memory_enabled`` and ``agent_memory_enabled``) govern what is said
while they hold, not what a formation running later happens to find.

An operator turns an agent's user memory off, a user tells her email meanwhile, and the operator
turns it on again before the session forms (it forms at a threshold, at its end or when idle, so
hours later): read at formation time, the switch would make what she said while it was off her
user memory. The other way round, what she said while it was on would be lost for good to a
moment's switch-off (the cursor moves past it). So a change of a switch marks, in the same
transaction, every session of the agent with messages still to form: ``(seq, user, agent)``,
"the messages up to this seq were recorded under these switches", seq the session's last then
(``SessionAgentState.switch_marks``, the store's own field, like ``withheld``). Messages after the
last mark were recorded under the agent's switches now.

A formation window never spans a mark (``window_end``), like it never spans the moment a
session became a group (memory/group_start.py), and its scopes are those of the switches its
messages were recorded under (``as_recorded``). The marks only follow what the store holds, so a
window loaded again after a failed attempt is the same window; a mark set while a window forms
is at a seq no lower than the window's last, with the switches the window was loaded with.

Marks are few: one per change of a switch in a session with messages recorded since its last
mark, so never more than its messages; they go with the session when it is deleted. States
stored before (and sessions an import creates) have none: their messages form under the
switches at formation time, as they did.
"""

from __future__ import annotations

import json
from typing import Any

from memory.models import AgentConfig

# (seq, user memory on, agent memory on), in ascending seqs: the messages after the previous
# mark up to seq were recorded under these switches.
type SwitchMark = tuple[int, bool, bool]
type SwitchMarks = tuple[SwitchMark, ...]


def switches(agent: AgentConfig) -> tuple[bool, bool]:
    return agent.user_memory_enabled, agent.agent_memory_enabled


def flipped(before: AgentConfig | None, after: AgentConfig) -> bool:
    """Whether writing ``after`` in place of ``before`` changes a memory switch (a new agent has
    no session to mark)."""
    return before is not None and switches(before) != switches(after)


def marked(marks: SwitchMarks, last_seq: int, before: AgentConfig) -> SwitchMarks:
    """A session's marks once ``before``'s switches change while its last message is
    ``last_seq``. Unchanged when a mark already ends there: nothing was recorded under the
    switches that held since (a switch turned off and on again with no message between)."""
    if marks and marks[-1][0] >= last_seq:
        return marks
    return (*marks, (last_seq, *switches(before)))


def window_end(after_seq: int, upto_seq: int, marks: SwitchMarks) -> int:
    """The last message of a window (after_seq, upto_seq]: the first mark inside it, if any."""
    return next((seq for seq, _, _ in marks if after_seq < seq < upto_seq), upto_seq)


def as_recorded(agent: AgentConfig, marks: SwitchMarks, upto_seq: int) -> AgentConfig:
    """The agent with the switches a window whose last message is ``upto_seq`` (and which spans
    no mark) was recorded under: the first mark at or after it, else the agent's own."""
    for seq, user, agent_memory in marks:
        if seq >= upto_seq:
            return agent.model_copy(
                update={"user_memory_enabled": user, "agent_memory_enabled": agent_memory}
            )
    return agent


def parsed(raw: object) -> SwitchMarks:
    """Marks as stored (JSON text in the SQL backends, a list in MongoDB); none for rows stored
    before."""
    items: Any = json.loads(raw) if isinstance(raw, str) else (raw or ())
    return tuple((int(s), bool(u), bool(a)) for s, u, a in items)


def dumped(marks: SwitchMarks) -> list[list[int | bool]]:
    return [[seq, user, agent] for seq, user, agent in marks]
