"""A per-process cache of ``<MemoryContext>`` XML, exact across processes (002 "Caching").

An entry serves for at most ``settings.context.cache_ttl_seconds`` (5 minutes), and only while the
change counters of its scope keys (agent, user, session) are those it was built at: every commit
that changes what the context shows — facts, buffered reflections, a consolidated blob — bumps the
counter of the key it touched, in the shared store, so a write by any process invalidates the
entry on the next read. The check is one ``store.scope_versions`` call; a hit costs nothing else.

Within the TTL the fact ages shown ("5m ago") are those of the build time, and a fact may outstay
the FIFO age window by up to the TTL: both are what a 5-minute cache means.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from memory.context import assemble_context, visible_scopes
from memory.models import AgentConfig, SessionInfo
from memory.settings import Settings
from memory.store.base import MemoryStore

DEFAULT_MAX_ENTRIES = 10_000

# agent, user and session ids, and the scope keys the turn may see (toggles, group chat).
_Key = tuple[str, str | None, str, tuple[str, ...]]


@dataclass(frozen=True)
class _Entry:
    xml: str
    built_at: datetime
    versions: dict[str, int]


class ContextCache:
    """``get`` returns the cached XML while it is fresh, else assembles and caches it.

    Least recently used entries are dropped beyond ``max_entries``. ``hits`` and ``misses`` count
    the answers; a miss is a first build, an expired entry or a changed scope version.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max_entries = max_entries
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    async def get(
        self,
        store: MemoryStore,
        settings: Settings,
        *,
        agent: AgentConfig,
        session: SessionInfo,
        user_id: str | None,
        now: datetime,
    ) -> str:
        visible = visible_scopes(agent, session, user_id)
        key: _Key = (
            agent.agent_id,
            user_id,
            session.session_id,
            tuple(k.key for k in visible.keys),
        )
        # The keys of what is shown: fact writes bump their fact's agent or user key, reflection
        # and blob writes their own key. A toggle or group change alters the cache key instead.
        versions = await store.scope_versions([k.key for k in visible.keys])

        entry = self._entries.get(key)
        ttl = settings.context.cache_ttl_seconds
        if entry is not None:
            age = (now - entry.built_at).total_seconds()
            if 0 <= age < ttl and entry.versions == versions:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry.xml
        self.misses += 1
        # Versions read before the build: a commit landing during the build leaves the entry
        # with older versions than the store, so the next read rebuilds (never stale, at worst
        # one extra build).
        xml = await assemble_context(
            store, settings, agent=agent, session=session, user_id=user_id, now=now
        )
        self._entries[key] = _Entry(xml=xml, built_at=now, versions=versions)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)
        return xml
