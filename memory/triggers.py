"""When a formation is due (002 "Formation Triggers"), and when asking for it again is redundant.
One function serves the client and the workflow."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from memory.models import SessionAgentState
from memory.settings import FormationSettings


def formation_due(state: SessionAgentState, cfg: FormationSettings) -> bool:
    """Hot path: at least ``min_messages``, and the message or the weighted-token interval reached."""
    if state.pending_messages < cfg.min_messages:
        return False
    return (
        state.pending_messages >= cfg.message_interval
        or state.pending_weighted_tokens >= cfg.token_interval
    )


@dataclass(frozen=True)
class _Sent:
    cursor_seq: int
    at: float


class HeldTriggers:
    """The formation requests this process sent, so that a session past its threshold does not
    signal its formation again on every turn until that formation commits.

    A request is outstanding while the session's cursor has not moved since it was sent: the
    formation it asked for has not committed yet, and when it commits it goes round once more by
    itself if what arrived meanwhile is due (FormMemories, ``CommitResult.due_after``), so a
    second request adds nothing but a workflow task. Once the cursor moves, the next due turn
    asks again. Held at most ``hold_seconds``: a request whose formation never commits (a run
    terminated by hand) is sent again after that, never lost. Bounded: the oldest entries go
    first (forgetting one costs one redundant request).
    """

    def __init__(
        self,
        hold_seconds: float,
        capacity: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.hold_seconds = hold_seconds
        self._capacity = capacity
        self._clock = clock
        self._sent: OrderedDict[tuple[str, str], _Sent] = OrderedDict()

    def holds(self, agent_id: str, session_id: str, cursor_seq: int) -> bool:
        """Whether a request this process sent for (agent, session) is still outstanding."""
        sent = self._sent.get((agent_id, session_id))
        if sent is None:
            return False
        if sent.cursor_seq != cursor_seq or self._clock() - sent.at >= self.hold_seconds:
            del self._sent[(agent_id, session_id)]
            return False
        return True

    def sent(self, agent_id: str, session_id: str, cursor_seq: int) -> None:
        """A request was sent (the workflow took it) when the cursor stood at ``cursor_seq``."""
        if self.hold_seconds <= 0:
            return
        key = (agent_id, session_id)
        self._sent[key] = _Sent(cursor_seq, self._clock())
        self._sent.move_to_end(key)
        while len(self._sent) > self._capacity:
            self._sent.popitem(last=False)
