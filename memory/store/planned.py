"""The writing half of the store contract, once for both backends: each call is a request for a
snapshot, a planner (memory.store.rules) and the backend's ``_transact``, which reads the
snapshot, plans and applies the writes in one transaction of its own.

Both backends are traced here (memory.tracing): a span per transaction, named by its request
("store commit formation"), and per read the formation and search paths make."""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np

from memory import tracing
from memory.api_keys import ApiKey
from memory.formation_commit import FormationCommit, FormationCommitResult
from memory.ids import content_hash
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    MessageIn,
    RecordOutcome,
    Reflection,
    ScopeKey,
)
from memory.store.base import Vector
from memory.store.planned_lifecycle import PlannedLifecycle
from memory.store.rules import (
    ApiKeyRequest,
    ConsolidationRequest,
    FactRequest,
    Plan,
    RecordRequest,
    ReflectionRequest,
    Request,
    consolidation_blob,
    formation_request,
    plan_consolidation,
    plan_create_api_key,
    plan_delete_reflection,
    plan_edit_fact,
    plan_edit_reflection,
    plan_formation,
    plan_invalidate_fact,
    plan_record_messages,
    plan_revoke_api_key,
    plan_set_aside,
)
from memory.store.rules.agents import AgentRequest, plan_update_agent, plan_upsert_agent
from memory.store.rules.purge import PurgeRequest, plan_purge
from memory.store.rules.reembed import SwitchRequest, plan_switch
from memory.store.rules.reform import ReformRequest, plan_mark_reformed

# The reads of a formation, a consolidation and a search: each gets a span with its row count.
TRACED_READS = (
    "get_agent",
    "get_session",
    "get_session_agent_state",
    "load_messages",
    "get_messages",
    "get_embeddings",
    "put_embeddings",
    "get_facts",
    "vector_search",
    "text_search",
    "recent_facts",
    "embedding_meta",
    "unabsorbed_reflections",
    "count_unabsorbed",
    "get_consolidated",
    "scope_versions",
)


class PlannedStore(PlannedLifecycle):
    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tracing.trace_store_methods(cls, TRACED_READS)

    @abc.abstractmethod
    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        """In one transaction: read the request's snapshot, plan on it, apply the plan's
        writes in order; return its result. Any exception leaves nothing written."""

    async def record_messages(
        self,
        session_id: str,
        agent_id: str,
        messages: Sequence[MessageIn],
        *,
        weights: dict[str, float],
        chars_per_token: float,
        now: datetime,
        may_join: Collection[str] | None = None,
    ) -> RecordOutcome:
        ids = tuple(dict.fromkeys(m.message_id for m in messages))
        joinable = None if may_join is None else frozenset(may_join)
        return await self._transact(
            RecordRequest(session_id, agent_id, ids),
            lambda snapshot: plan_record_messages(
                session_id, agent_id, messages, weights=dict(weights),
                chars_per_token=chars_per_token, now=now, snapshot=snapshot, may_join=joinable,
            ),
        )  # fmt: skip

    async def commit_formation(self, commit: FormationCommit) -> FormationCommitResult:
        return await self._transact(
            formation_request(commit), lambda snapshot: plan_formation(commit, snapshot)
        )

    async def commit_consolidation(
        self,
        key: ScopeKey,
        *,
        expected_version: int,
        content: str,
        word_limit: int,
        absorbed_ids: Sequence[str],
        at: datetime,
        edited_by: str = "consolidation",
        absorbed_hashes: Mapping[str, str] | None = None,
        said_from: datetime | None = None,
    ) -> ConsolidatedMemory:
        blob = consolidation_blob(
            key, expected_version=expected_version, content=content, word_limit=word_limit,
            at=at, edited_by=edited_by, said_from=said_from,
        )  # fmt: skip
        ids = tuple(dict.fromkeys(absorbed_ids))
        return await self._transact(
            ConsolidationRequest(key.key, ids, contents=bool(absorbed_hashes)),
            lambda snapshot: plan_consolidation(blob, ids, snapshot, absorbed_hashes),
        )

    async def edit_fact(
        self,
        fact_id: str,
        *,
        content: str,
        embedding: Vector,
        embedding_model: str,
        at: datetime,
        reason: str = "manual edit",
        expected_version: int | None = None,
    ) -> Fact:
        vector = [float(x) for x in np.asarray(embedding, dtype=np.float32).reshape(-1)]
        return await self._transact(
            FactRequest(fact_id, content_hash(content)),
            lambda snapshot: plan_edit_fact(
                fact_id, content=content, embedding=vector, embedding_model=embedding_model,
                at=at, reason=reason, snapshot=snapshot, expected_version=expected_version,
            ),
        )  # fmt: skip

    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        return await self._transact(
            FactRequest(fact_id),
            lambda snapshot: plan_invalidate_fact(fact_id, at=at, reason=reason, snapshot=snapshot),
        )

    async def set_aside_reflection(
        self, key: ScopeKey, reflection_id: str, *, content_hash: str
    ) -> bool:
        return await self._transact(
            ReflectionRequest(reflection_id),
            lambda current: plan_set_aside(key, reflection_id, content_hash, current),
        )

    async def edit_reflection(
        self, reflection_id: str, *, content: str, expected_content: str | None = None
    ) -> Reflection:
        return await self._transact(
            ReflectionRequest(reflection_id),
            lambda current: plan_edit_reflection(reflection_id, content, current, expected_content),
        )

    async def delete_reflection(self, reflection_id: str) -> None:
        await self._transact(
            ReflectionRequest(reflection_id),
            lambda current: plan_delete_reflection(reflection_id, current),
        )

    async def purge_ended_sessions(self, ended_before: datetime, limit: int) -> list[str]:
        if limit <= 0:
            return []
        return await self._transact(PurgeRequest(ended_before, limit), plan_purge)

    async def mark_reformed(
        self,
        agent_id: str,
        session_id: str,
        after_seq: int,
        upto_seq: int,
        *,
        steps: Sequence[str],
        at: datetime,
    ) -> int:
        return await self._transact(
            ReformRequest(session_id, agent_id),
            partial(plan_mark_reformed, after_seq, upto_seq, frozenset(steps), at),
        )

    # ------------------------------------------------------------ re-embedding

    async def count_reembed_pending(self, model: str, dimension: int) -> tuple[int, int]:
        # What the switch would find, read in the same kind of transaction, writing nothing.
        request = SwitchRequest(model, dimension)
        return await self._transact(request, lambda pending: Plan((), pending))

    async def switch_embedding(self, model: str, dimension: int) -> int:
        switched = await self._transact(
            SwitchRequest(model, dimension),
            lambda pending: plan_switch(model, dimension, pending),
        )
        self._meta = None
        return switched

    # ------------------------------------------------------------ agents

    async def upsert_agent(self, config: AgentConfig) -> None:
        await self._transact(AgentRequest(config.agent_id), partial(plan_upsert_agent, config))

    async def _update_agent(
        self, agent_id: str, change: Callable[[AgentConfig], AgentConfig]
    ) -> AgentConfig | None:
        # Read and written in one transaction: a concurrent change of another field holds
        # (SQLite's one writer, PostgreSQL's SERIALIZABLE and MongoDB's write conflict on the
        # agent's document each run the later one again on the first one's write).
        return await self._transact(AgentRequest(agent_id), partial(plan_update_agent, change))

    # ------------------------------------------------------------ API keys

    async def create_api_key(self, key: ApiKey) -> ApiKey:
        return await self._transact(
            ApiKeyRequest(key.key_id), lambda current: plan_create_api_key(key, current)
        )

    async def revoke_api_key(self, key_id: str, *, at: datetime) -> ApiKey:
        return await self._transact(
            ApiKeyRequest(key_id),
            lambda current: plan_revoke_api_key(key_id, at=at, current=current),
        )
