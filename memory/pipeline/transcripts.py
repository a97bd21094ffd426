"""The messages of one formation window, loaded once per pass and shared by its steps.

Transcripts never travel through workflow inputs or results (history stays small and holds no
conversation text); instead each worker keeps the few windows it worked on last. A message range
changes after it is recorded only when a user is forgotten (their messages deleted), and that
changes the window's users or their erasure epochs: so an entry keyed by formation id (session,
agent, range) and those epochs never goes stale; a step that runs on another worker, or after
eviction, simply loads it again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

from memory.models import StoredMessage
from memory.store.base import MemoryStore

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
    ) -> list[StoredMessage]:
        key = (formation_id, tuple(sorted(user_epochs.items())))
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit
        loaded = await store.load_messages(session_id, after_seq, upto_seq)
        self.loads += 1
        self._entries[key] = loaded
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return loaded
