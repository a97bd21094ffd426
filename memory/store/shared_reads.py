"""The reading calls of the store contract whose rules are the same on every backend, written
once (and the unplanned session ends): which reflections a listing holds and in what order, what
a scope key never written reads as, which ids and cached vectors are asked for, the embedding
meta's cache, what ending an unknown session is, that a page of no rows (limit <= 0) is empty.
Each backend answers one narrower query per call (the abstract ``_`` methods) in its own
database's terms, and the calls that are one of its snapshot reads (memory.store.snapshots)
outside a transaction go through ``_read_once``."""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, Literal

from memory.api_keys import ApiKey
from memory.degraded import DegradedWindow
from memory.directory import AgentUser
from memory.errors import NotFoundError
from memory.models import (
    ConsolidatedMemory,
    Fact,
    FactFilter,
    Reflection,
    ScopeKey,
    ScoredFact,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base import MemoryStore, ReembedItem, Vector
from memory.store.rules.withheld import formable
from memory.store.snapshots import SnapshotReads

# Which reflections a listing reads: the buffer alone is the context's and the consolidation's
# (a partial index of its own on SQLite); those in no blob add the set-aside ones.
type Which = Literal["buffered", "in_no_blob", "all"]
# Where a page of cold sessions starts: after this (last_message_at, session, agent); None first.
type Cold = tuple[datetime, str, str] | None


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

    async def get_session_agent_state(
        self, session_id: str, agent_id: str
    ) -> SessionAgentState | None:
        return await self._read_once(lambda reads: reads.state(session_id, agent_id))

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._read_once(lambda reads: reads.reflection(reflection_id))

    async def get_api_key(self, key_id: str) -> ApiKey | None:
        return await self._read_once(lambda reads: reads.api_key(key_id))

    async def get_consolidated(self, key: ScopeKey) -> ConsolidatedMemory | None:
        return (await self._read_once(lambda reads: reads.blobs([key.key]))).get(key.key)

    async def count_unabsorbed(self, key: ScopeKey) -> int:
        counts = await self._read_once(lambda reads: reads.buffered_counts([key.key]))
        return counts[key.key]

    # ------------------------------------------------------------ messages and sessions

    @abc.abstractmethod
    async def _messages(self, session_id: str, message_ids: list[str]) -> list[StoredMessage]:
        """The session's messages among ``message_ids`` (distinct, not empty), in seq order."""

    async def get_messages(
        self, session_id: str, message_ids: Sequence[str], agent_id: str | None = None
    ) -> list[StoredMessage]:
        ids = list(dict.fromkeys(message_ids))
        found = await self._messages(session_id, ids) if ids else []
        state = (
            None if agent_id is None else await self.get_session_agent_state(session_id, agent_id)
        )
        return found if state is None else formable(found, state.withheld)

    @abc.abstractmethod
    async def _cold_sessions(
        self, idle_before: datetime, min_messages: int, min_tokens: float, after: Cold, limit: int
    ) -> list[SessionAgentState]:
        """list_cold_sessions with limit > 0."""

    async def list_cold_sessions(
        self,
        *,
        idle_before: datetime,
        min_messages: int,
        min_weighted_tokens: float,
        after: Cold,
        limit: int,
    ) -> list[SessionAgentState]:
        if limit <= 0:
            return []
        return await self._cold_sessions(
            idle_before, min_messages, min_weighted_tokens, after, limit
        )

    @abc.abstractmethod
    async def _unfinished_ended_sessions(
        self, ended_before: datetime, after: tuple[str, str], limit: int
    ) -> list[tuple[str, str]]:
        """list_unfinished_ended_sessions after a page boundary ("", "" for the first), limit > 0."""

    async def list_unfinished_ended_sessions(
        self, *, ended_before: datetime, after: tuple[str, str] | None, limit: int
    ) -> list[tuple[str, str]]:
        if limit <= 0:
            return []
        return await self._unfinished_ended_sessions(ended_before, after or ("", ""), limit)

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

    @abc.abstractmethod
    async def _touch_facts(self, fact_ids: list[str], at: datetime) -> None:
        """touch_facts for distinct ids, sorted, not empty."""

    async def touch_facts(self, fact_ids: Sequence[str], at: datetime) -> None:
        if ids := sorted(set(fact_ids)):  # one lock order for every toucher
            await self._touch_facts(ids, at)

    @abc.abstractmethod
    async def _text_search(self, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
        """text_search with limit > 0."""

    async def text_search(self, query: str, flt: FactFilter, *, limit: int) -> list[ScoredFact]:
        return await self._text_search(query, flt, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _recent_facts(self, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
        """recent_facts with limit > 0."""

    async def recent_facts(self, flt: FactFilter, *, since: datetime, limit: int) -> list[Fact]:
        return await self._recent_facts(flt, since, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _list_facts(
        self, flt: FactFilter, *, valid_only: bool, offset: int, limit: int
    ) -> list[Fact]:
        """list_facts with offset >= 0 and limit > 0: newest (updated_at) first, then the later
        stored first."""

    async def list_facts(
        self, flt: FactFilter, *, include_invalid: bool = False, offset: int = 0, limit: int = 50
    ) -> list[Fact]:
        if limit <= 0:
            return []
        return await self._list_facts(
            flt, valid_only=not include_invalid, offset=max(offset, 0), limit=limit
        )

    # ------------------------------------------------------------ reflections

    @abc.abstractmethod
    async def _reflections(
        self, key: ScopeKey, *, which: Which, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        """The key's reflections (``which``: the buffered ones, absorbed_into_version None; those
        in no blob, the buffered and the set-aside ones, SET_ASIDE; or all) ordered by
        formed_at, then by insertion (the later stored last), in that direction; at most
        ``limit`` (> 0) of them, all of them for None."""

    async def unabsorbed_reflections(
        self, key: ScopeKey, *, limit: int | None = None, newest_first: bool = False
    ) -> list[Reflection]:
        if limit is not None and limit <= 0:
            return []
        return await self._reflections(
            key, which="buffered", newest_first=newest_first, limit=limit
        )

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        if limit <= 0:
            return []
        # Not absorbed: the buffer and the set-aside ones a person may still correct.
        which: Which = "all" if include_absorbed else "in_no_blob"
        return await self._reflections(key, which=which, newest_first=True, limit=limit)

    # ------------------------------------------------------------ change counters and epochs

    @abc.abstractmethod
    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        """The stored counters among ``keys`` (distinct, not empty); keys never written absent."""

    async def scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(keys))
        stored = await self._stored_scope_versions(wanted) if wanted else {}
        return {key: stored.get(key, 0) for key in wanted}

    async def erasure_epochs(self, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        users = list(dict.fromkeys(user_ids))
        return await self._read_once(lambda reads: reads.epochs(agent_id, users))

    # ------------------------------------------------------------ listings (limit > 0 below)

    @abc.abstractmethod
    async def _list_degraded(
        self, agent_id: str | None, session_id: str | None, include_reformed: bool, limit: int
    ) -> list[DegradedWindow]:
        """list_degraded with limit > 0."""

    async def list_degraded(
        self,
        *,
        agent_id: str | None = None,
        session_id: str | None = None,
        include_reformed: bool = False,
        limit: int = 100,
    ) -> list[DegradedWindow]:
        if limit <= 0:
            return []
        return await self._list_degraded(agent_id, session_id, include_reformed, limit)

    @abc.abstractmethod
    async def _list_agent_users(self, agent_id: str, limit: int) -> list[AgentUser]:
        """list_agent_users with limit > 0."""

    async def list_agent_users(self, agent_id: str, *, limit: int = 100) -> list[AgentUser]:
        return await self._list_agent_users(agent_id, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _list_agent_sessions(
        self, agent_id: str, user_id: str | None, limit: int
    ) -> list[SessionInfo]:
        """list_agent_sessions with limit > 0."""

    async def list_agent_sessions(
        self, agent_id: str, *, user_id: str | None = None, limit: int = 100
    ) -> list[SessionInfo]:
        return await self._list_agent_sessions(agent_id, user_id, limit) if limit > 0 else []

    @abc.abstractmethod
    async def _reembed_pending(self, model: str, limit: int) -> list[ReembedItem]:
        """reembed_pending with limit > 0."""

    async def reembed_pending(self, model: str, *, limit: int) -> list[ReembedItem]:
        return await self._reembed_pending(model, limit) if limit > 0 else []
