"""The reading calls of the store contract whose rules are the same on every backend, written
once (and the unplanned session ends): what a scope key never written reads as, which ids and
cached vectors are asked for, the embedding meta's cache, what ending an unknown session is. (The
reads of a page, with their limit rule, are MemoryStore's own.) Each backend answers one narrower
query per call (the abstract ``_`` methods) in its own database's terms, and the calls that are
one of its snapshot reads (memory.store.snapshots) outside a transaction go through
``_read_once``."""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any

from memory.api_keys import ApiKey
from memory.errors import NotFoundError
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
    SessionAgentState,
    StoredMessage,
)
from memory.store.base import MemoryStore, Vector
from memory.store.counts import SessionPeople
from memory.store.rules.import_erasures import Known
from memory.store.rules.imports import session_keys
from memory.store.rules.versions import deleted_by_hand
from memory.store.rules.withheld import formable
from memory.store.snapshots import SnapshotReads
from memory.store.snapshots_erased import forgotten_session_memory


class SharedReads(MemoryStore):
    @abc.abstractmethod
    async def _read_once[T](self, read: Callable[[SnapshotReads], Coroutine[Any, Any, T]]) -> T:
        """``read`` on the backend's snapshot reads, outside a planned transaction: the store
        calls that ask what a planner's snapshot asks are answered by the same query."""

    # ------------------------------------------------------------ single reads

    _meta: tuple[str, int] | None = None  # changed only by a re-embed switch

    async def embedding_meta(self, *, fresh: bool = False) -> tuple[str, int] | None:
        if fresh or self._meta is None:
            self._meta = await self._read_once(lambda reads: reads.embedding_meta())
        return self._meta

    async def get_agent(self, agent_id: str) -> AgentConfig | None:
        return next(iter(await self._read_once(lambda reads: reads.agents([agent_id]))), None)

    async def get_session_agent_state(
        self, session_id: str, agent_id: str
    ) -> SessionAgentState | None:
        return await self._read_once(lambda reads: reads.state(session_id, agent_id))

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._read_once(lambda reads: reads.reflection(reflection_id))

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return await self._read_once(lambda reads: reads.api_key(key_id))

    async def list_api_keys(self) -> list[ApiKey]:
        keys = await self._read_once(lambda reads: reads.api_keys(None))
        return sorted(keys, key=lambda k: (k.created_at, k.key_id))  # oldest first, then by id

    async def get_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None:
        return (await self._read_once(lambda reads: reads.blobs([key.key]))).get(key.key)

    async def count_unabsorbed(self, key: ScopeKey) -> int:
        counts = await self._read_once(lambda reads: reads.buffered_counts([key.key]))
        return counts[key.key]

    # ------------------------------------------------------------ messages and sessions

    async def get_messages(
        self, session_id: str, message_ids: Sequence[str], agent_id: str | None = None
    ) -> list[StoredMessage]:
        ids = list(dict.fromkeys(message_ids))
        found = await self._read_once(lambda r: r.stored_messages(session_id, ids)) if ids else []
        found.sort(key=lambda m: m.seq)
        state = (
            None if agent_id is None else await self.get_session_agent_state(session_id, agent_id)
        )
        return found if state is None else formable(found, state.withheld)

    @abc.abstractmethod
    async def _end_session(self, session_id: str, agent_id: str, at: datetime) -> bool:
        """Set the agent's ended_at = at, not purged; False when it has no such session."""

    async def end_session(self, session_id: str, agent_id: str, at: datetime) -> None:
        # Ending again (a resumed session) restarts the retention period of its memory.
        if not await self._end_session(session_id, agent_id, at):
            raise NotFoundError(f"no session {session_id} of agent {agent_id}")

    # ------------------------------------------------------------ embeddings cache

    @abc.abstractmethod
    async def _put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        """put_embeddings of at least one vector."""

    async def put_embeddings(self, model: str, vectors: dict[str, Vector]) -> None:
        if vectors:
            await self._put_embeddings(model, vectors)

    @abc.abstractmethod
    async def _embeddings(self, model: str, text_hashes: list[str]) -> dict[str, Vector]:
        """The cached vectors of ``model`` among ``text_hashes`` (distinct, not empty)."""

    async def get_embeddings(self, model: str, text_hashes: Sequence[str]) -> dict[str, Vector]:
        hashes = list(dict.fromkeys(text_hashes))
        return await self._embeddings(model, hashes) if hashes else {}

    # ------------------------------------------------------------ facts

    async def get_facts(self, fact_ids: Sequence[str]) -> list[Fact]:
        ids = list(dict.fromkeys(fact_ids))
        if not ids:
            return []
        found = await self._read_once(lambda reads: reads.facts_by_id(ids))
        by_id = {fact.fact_id: fact for fact in found}
        return [by_id[fact_id] for fact_id in ids if fact_id in by_id]  # in the order asked

    async def hand_deleted_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[Fact]:
        if not owners:
            return []
        gone = await self._read_once(
            lambda reads: reads.deleted_by_hand_since(agent_id, since, owners)
        )
        # The read's filter, by the rule's one definition (as snapshots.read_snapshot's).
        return [fact for fact in gone if deleted_by_hand(fact) is not None]

    @abc.abstractmethod
    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        """touch_facts for distinct ids, sorted, not empty."""

    async def touch_facts(self, fact_ids: Sequence[str], at: datetime) -> None:
        if ids := sorted(set(fact_ids)):  # one lock order for every toucher
            await self._touch_facts(ids, at)

    # ------------------------------------------------------------ change counters and epochs

    @abc.abstractmethod
    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        """The stored counters among ``keys`` (distinct, not empty); keys never written absent."""

    async def scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(keys))
        stored = await self._stored_scope_versions(wanted) if wanted else {}
        return {key: stored.get(key, 0) for key in wanted}

    async def erasure_epochs(
        self, agent_id: str, user_ids: Sequence[str], *, known: Known = ()
    ) -> dict[str, int]:
        users = list(dict.fromkeys(user_ids))
        return await self._read_once(lambda reads: reads.epochs(agent_id, users, known))

    async def forgotten_session_memory(
        self,
        keys: Sequence[ScopeKey],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> frozenset[str]:
        if not session_keys(keys):  # only session memory is judged so: nothing to read
            return frozenset()
        return await self._read_once(
            lambda reads: forgotten_session_memory(reads, keys, sessions, known)
        )
