"""What of an import's records the forgets refuse, read for its snapshots
(memory.store.snapshots_lifecycle) and for the store's read of it outside a transaction
(MemoryStore.forgotten_session_memory, a dry run's): the erasure epochs of (agent, user) pairs,
and the session memory forget_user deleted (rules.imports.session_memory_gone)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

from memory.models import ScopeKey, SessionAgentState
from memory.store.counts import SessionPeople
from memory.store.rules import import_erasures as ie
from memory.store.rules import imports as ri
from memory.store.rules.erased_messages import gone_with_users
from memory.store.rules.repair_parted import Tombstone


class Head(NamedTuple):
    """A session's own row: its last seq, its last message's time, and whether a guest spoke in
    it (SessionInfo.has_guests)."""

    last_seq: int
    last_message_at: datetime | None
    guests: bool


class LifecycleReads(Protocol):
    """The reads these take, each backend's (memory.store.snapshots_lifecycle.LifecycleReads,
    which imports this module: named here by what it answers)."""

    async def epochs(
        self, agent_id: str, user_ids: Sequence[str], known: ie.Known = ()
    ) -> dict[str, int]: ...

    async def erasure_rows(
        self, agent_keys: Sequence[str], user_ids: Sequence[str] | None = None
    ) -> dict[tuple[str, str], ie.Mark]: ...

    async def session_users(self, session_id: str) -> tuple[str, ...]: ...

    async def session_states(self, session_id: str) -> list[SessionAgentState]: ...

    async def session_head(self, session_id: str) -> Head | None: ...

    async def session_tombstones(self, keys: Sequence[str]) -> list[Tombstone]: ...


async def pair_epochs(
    reads: LifecycleReads, pairs: Iterable[ri.Pair], known: ie.Known
) -> dict[ri.Pair, int]:
    return {
        (agent_id, user): epoch
        for agent_id, users in ri.users_by_agent(pairs).items()
        for user, epoch in (await reads.epochs(agent_id, users, known)).items()
    }


async def gone_sessions(
    reads: LifecycleReads, sessions: Sequence[SessionPeople], known: ie.Known
) -> frozenset[tuple[str, str]]:
    """The (session, agent) pairs of an import's session memory that forget_user deleted: each
    agent's whose users were all forgotten for it (the whole session when for each agent; an
    agent's memory of a session kept for another agent), judged with the session's agents and
    users, the file's and what the store still holds of it."""
    gone = set()
    for session_id, file_agents, file_users in sessions:
        if (head := await reads.session_head(session_id)) is not None and head.guests:
            continue  # a guest is a person: forget kept the session (rules.erasure.alone_in)
        stored = await reads.session_states(session_id)
        agents = tuple(dict.fromkeys((*file_agents, *(s.agent_id for s in stored))))
        users = tuple(dict.fromkeys((*file_users, *await reads.session_users(session_id))))
        epochs = await pair_epochs(reads, [(a, u) for a in agents for u in users], known)
        gone |= {(session_id, a) for a in agents if gone_with_users(epochs, (a,), users)}
    return frozenset(gone)


async def erased_scopes(
    reads: LifecycleReads, keys: Sequence[str], known: ie.Known
) -> frozenset[str]:
    """The session memory among ``keys`` a forget deleted, but that of a session tombstone the
    file knows of (it carries it, at the stored epoch or above, for each user it names it for):
    the file's memory of that session was formed after the forget."""
    erased = {t.key for t in await reads.session_tombstones(keys)} if keys else set()
    for key in erased & {k for k, _, _, _ in known}:
        users = [u for k, u, _, _ in known if k == key]
        if not ie.unknown(await reads.erasure_rows([key], users), known):
            erased.discard(key)
    return frozenset(erased)


async def forgotten_session_memory(
    reads: LifecycleReads,
    keys: Sequence[ScopeKey],
    sessions: Sequence[SessionPeople],
    known: ie.Known,
) -> frozenset[str]:
    """The scope keys among ``keys`` of session memory an import refuses as forgotten, read as
    its snapshots read it (import_consolidated's, import_reflections'), judged by its rule."""
    gone = await gone_sessions(reads, ri.sessions_of(sessions, keys), known)
    erased = await erased_scopes(reads, ri.session_keys(keys), known)
    return frozenset(k.key for k in keys if ri.session_memory_gone(k, gone, erased))
