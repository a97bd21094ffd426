"""The messages of one formation window, loaded once per pass and shared by its steps.

Transcripts never travel through workflow inputs or results (history stays small and holds no
conversation text); instead each worker keeps the few windows it worked on last. A message range
changes after it is recorded only when a user is forgotten (their messages deleted), and that
changes the window's users or their erasure epochs: so an entry keyed by formation id (session,
agent, range) and those epochs never goes stale; a step that runs on another worker, or after
eviction, simply loads it again.

A forget may also keep a user's messages for the other agents of a shared session, withheld from
the agent it forgot them for (memory/store/rules/withheld.py): the range is read as the agent
may form it, without them, by the agent's state as it is at each call (a row read; the entry
holds the range as stored).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from memory.models import StoredMessage
from memory.store.base import MemoryStore
from memory.store.rules.withheld import formable

# Enough for the passes one worker runs at once; each entry is at most max_messages_per_run long.
DEFAULT_ENTRIES = 16


class TranscriptCache:
    def __init__(self, max_entries: int = DEFAULT_ENTRIES) -> None:
        self._max = max_entries
        self._entries: OrderedDict[tuple[str, tuple[tuple[str, int], ...]], list[StoredMessage]] = (
            OrderedDict()
        )
        self.loads = 0  # store reads, for tests and metrics

    async def messages(
        self,
        store: MemoryStore,
        formation_id: str,
        session_id: str,
        after_seq: int,
        upto_seq: int,
        user_epochs: Mapping[str, int],
        agent_id: str | None = None,
    ) -> list[StoredMessage]:
        """The range's messages; with ``agent_id``, those the agent may form."""
        key = (formation_id, tuple(sorted(user_epochs.items())))
        loaded = self._entries.get(key)
        if loaded is not None:
            self._entries.move_to_end(key)
        else:
            loaded = await store.load_messages(session_id, after_seq, upto_seq)
            self.loads += 1
            self._entries[key] = loaded
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)
        if agent_id is None:
            return loaded
        state = await store.get_session_agent_state(session_id, agent_id)
        return loaded if state is None else formable(loaded, state.withheld)
