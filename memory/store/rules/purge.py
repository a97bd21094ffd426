"""The purge of ended sessions' memory (MemoryStore.purge_ended_sessions), planned once for every
backend: each (session, agent) pair the agent ended before the date, and where nothing was said
since the date, loses its session scope (reflections and blob), oldest end first; another
agent's memory of the same session stays. A message recorded into an ended session makes its
pairs unpurged again (AdvanceSession): what is formed of it is purged in its turn, once the
session has been quiet as long."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.models import ScopeKey
from memory.store.rules.lifecycle_writes import DeleteScope
from memory.store.rules.writes import BumpScopeVersions, MarkPurged, Plan, Request, Write


@dataclass(frozen=True)
class PurgeRequest(Request[list[tuple[str, str]]]):
    """The (session, agent) pairs ended before ``ended_before`` and not purged yet, by their end
    (then session, then agent), at most ``limit`` (> 0)."""

    ended_before: datetime
    limit: int


def plan_purge(pairs: list[tuple[str, str]]) -> Plan[list[str]]:
    """Returns the session id of each pair purged."""
    writes: list[Write] = []
    keys: set[str] = set()
    for session_id, agent_id in pairs:
        key = ScopeKey.session(agent_id, session_id).key
        writes += [DeleteScope(key), MarkPurged(session_id, agent_id)]
        keys.add(key)
    if keys:  # a cached context of these sessions (memory.context_cache) shows the purged memory
        writes.append(BumpScopeVersions(tuple(sorted(keys))))
    return Plan(tuple(writes), [session_id for session_id, _ in pairs])
