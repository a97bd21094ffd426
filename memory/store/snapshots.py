"""The snapshots the planners ask for (memory.store.rules), assembled once from the few reads
every backend answers inside its transaction (``SnapshotReads``): which rows a planner sees is
decided here, how they are read is each backend's.

The assembly is async; a backend over a blocking connection (SQLite, on its own thread) answers
with coroutines that never suspend, and runs the assembly with ``run_sync``."""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, cast

from memory.api_keys import ApiKey
from memory.degraded import DegradedWindow
from memory.formation_commit import FormationCommitResult
from memory.models import Fact, Reflection, SessionAgentState, StoredMessage
from memory.store.base_manage import ReembedTarget, reembed_target
from memory.store.rules import (
    ApiKeyRequest,
    ConsolidationRequest,
    ConsolidationSnapshot,
    FactRequest,
    FactSnapshot,
    FormationRequest,
    FormationSnapshot,
    Plan,
    RecordRequest,
    RecordSnapshot,
    ReflectionRequest,
    Request,
    Write,
    said,
)
from memory.store.rules.agents import AgentRequest
from memory.store.rules.purge import PurgeRequest
from memory.store.rules.recheck import reflection_text_key
from memory.store.rules.reembed import SwitchRequest
from memory.store.rules.reform import ReformRequest
from memory.store.rules.versions import deleted_by_hand
from memory.store.rules.withheld import bounds_after
from memory.store.snapshots_lifecycle import LifecycleReads, read_lifecycle_snapshot


class SnapshotReads(LifecycleReads):
    """One backend's reads, inside the transaction of the call that plans on them."""

    @abc.abstractmethod
    async def state(self, session_id: str, agent_id: str) -> SessionAgentState | None: ...

    @abc.abstractmethod
    async def formation_done(self, formation_id: str) -> FormationCommitResult | None:
        """The recorded result of a formation committed before."""

    @abc.abstractmethod
    async def participants(self, session_id: str, agent_id: str) -> frozenset[str]:
        """The users of the session who spoke to this agent."""

    @abc.abstractmethod
    async def valid_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[tuple[Fact, Sequence[float]]]:
        """The agent's valid facts inserted (by the store's own stamp) or updated at or after
        ``since`` (rules.recheck) whose user id is one of ``owners`` ("": no user id, the agent's
        own), with their vectors."""

    @abc.abstractmethod
    async def deleted_by_hand_since(
        self, agent_id: str, since: datetime, owners: Sequence[str]
    ) -> list[Fact]:
        """The agent's facts a person deleted (invalidated by no fact) at or after ``since``
        whose user id is one of ``owners`` ("": no user id)."""

    @abc.abstractmethod
    async def reflection_texts(
        self, keys: Sequence[str], texts: Sequence[str]
    ) -> list[tuple[str, str, int | None]]:
        """(scope key, content, absorbed_into_version) of the stored reflections of ``keys``
        whose content is one of ``texts``."""

    @abc.abstractmethod
    async def stored_messages(
        self, session_id: str, message_ids: Sequence[str]
    ) -> list[StoredMessage]:
        """The session's stored messages among ``message_ids``, in any order."""

    async def reflection(self, reflection_id: str) -> Reflection | None:
        return next(iter(await self.reflections([reflection_id])), None)

    async def blob_version(self, key: str) -> int:
        """The version of the scope key's consolidated blob, 0 without one."""
        blob = (await self.blobs([key])).get(key)
        return 0 if blob is None else blob.version

    @abc.abstractmethod
    async def api_keys(self, key_ids: Sequence[str] | None) -> list[ApiKey]:
        """The stored keys among ``key_ids`` (None: every one), revoked ones too, in any order."""

    async def api_key(self, key_id: str) -> ApiKey | None:
        return next(iter(await self.api_keys([key_id])), None)

    @abc.abstractmethod
    async def ended_unpurged(self, ended_before: datetime, limit: int) -> list[tuple[str, str]]:
        """rules.purge.PurgeRequest's pairs."""

    @abc.abstractmethod
    async def reembed_pending(self, target: ReembedTarget) -> tuple[int, int]:
        """(``target``'s pending facts, all facts)."""

    @abc.abstractmethod
    async def unreformed(self, session_id: str, agent_id: str) -> list[DegradedWindow]:
        """rules.reform.ReformRequest's records, in any order."""


async def _formation(reads: SnapshotReads, req: FormationRequest) -> FormationSnapshot:
    facts = {f.fact_id: f for f in await reads.facts_by_id(req.fact_ids)}
    facts |= {f.fact_id: f for f in await reads.facts_with_hashes(req.agent_id, req.hashes)}
    # The facts the retired ones of those texts were retired in favour of: an add said before
    # the statement that retired its text does not revive it (rules.fact_ops).
    if retirers := {f.invalidated_by for f in facts.values() if f.invalidated_by} - facts.keys():
        facts |= {f.fact_id: f for f in await reads.facts_by_id(sorted(retirers))}
    recent: list[tuple[Fact, Sequence[float]]] = []
    if req.recent_since is not None and req.recent_owners:
        recent = await reads.valid_since(req.agent_id, req.recent_since, req.recent_owners)
    deleted: list[Fact] = []
    if req.deleted_since is not None and req.recent_owners:
        gone = await reads.deleted_by_hand_since(req.agent_id, req.deleted_since, req.recent_owners)
        # The read's filter, by the rule's one definition: a formation's delete replaced the
        # fact by another, which stands.
        deleted = [f for f in gone if deleted_by_hand(f) is not None]
    texts: frozenset[tuple[str, str, int | None]] = frozenset()
    versions: dict[str, int] = {}
    if req.reflection_texts:
        rows = await reads.reflection_texts(req.scope_keys, req.reflection_texts)
        texts = frozenset((*reflection_text_key(k, text), v) for k, text, v in rows)
        # Whether an absorbed text is in its key's current blob (rules.recheck.in_memory).
        if absorbed := sorted({key for key, _, version in texts if version}):
            versions = {key: b.version for key, b in (await reads.blobs(absorbed)).items()}
    state = await reads.state(req.session_id, req.agent_id)
    # The messages withheld from the agent are none of its pending (rules.withheld).
    withheld = bounds_after(state.withheld, req.new_cursor) if state is not None else ()
    return FormationSnapshot(
        done=await reads.formation_done(req.formation_id),
        state=state,
        embedding_meta=await reads.embedding_meta(),
        facts=list(facts.values()),
        existing_reflections=await reads.existing_reflections(req.reflection_ids),
        buffered=await reads.buffered_counts(req.scope_keys),
        pending_after=await reads.pending_after(req.session_id, req.new_cursor, withheld=withheld),
        participants=await reads.participants(req.session_id, req.agent_id),
        epochs=await reads.epochs(req.agent_id, req.users),
        recent=recent,
        reflection_texts=texts,
        blob_versions=versions,
        deleted=deleted,
    )


async def _record(reads: SnapshotReads, req: RecordRequest) -> RecordSnapshot:
    head = await reads.session_head(req.session_id)
    # Every agent of the session (a caller acting for some agents only may not join one holding
    # another), the calling agent's state among them: one read instead of the state's own.
    states = await reads.session_states(req.session_id) if head is not None else []
    agent_ids = tuple(s.agent_id for s in states)
    return RecordSnapshot(
        session_exists=head is not None,
        last_seq=0 if head is None else head.last_seq,
        last_message_at=None if head is None else head.last_message_at,
        state=next((s for s in states if s.agent_id == req.agent_id), None),
        stored={
            m.message_id: said(m)
            for m in await reads.stored_messages(req.session_id, req.message_ids)
        },
        agent_ids=agent_ids,
        states=tuple(states),
        switches=await reads.agent_switches(tuple(dict.fromkeys((*agent_ids, req.agent_id)))),
    )


async def _fact(reads: SnapshotReads, req: FactRequest) -> FactSnapshot:
    fact = next(iter(await reads.facts_by_id([req.fact_id])), None)
    same: list[Fact] = []
    if fact is not None and req.content_hash is not None:
        same = await reads.facts_with_hashes(fact.agent_id, [req.content_hash])
    return FactSnapshot(fact, same, await reads.embedding_meta())


async def _consolidation(reads: SnapshotReads, req: ConsolidationRequest) -> ConsolidationSnapshot:
    key, found = req.key, await reads.reflections(req.reflection_ids)
    contents = {r.reflection_id: r.content for r in found} if req.contents else {}
    # How many of them are unabsorbed reflections of the scope key.
    buffered = sum(r.scope_key.key == key and r.absorbed_into_version is None for r in found)
    return ConsolidationSnapshot(await reads.blob_version(key), buffered, contents)


async def read_snapshot[S](reads: SnapshotReads, request: Request[S]) -> S:
    """The snapshot a planner asks for (see memory.store.rules)."""
    snapshot: object
    match request:
        case FormationRequest():
            snapshot = await _formation(reads, request)
        case RecordRequest():
            snapshot = await _record(reads, request)
        case ReflectionRequest(reflection_id=reflection_id):
            snapshot = await reads.reflection(reflection_id)
        case FactRequest():
            snapshot = await _fact(reads, request)
        case ConsolidationRequest():
            snapshot = await _consolidation(reads, request)
        case AgentRequest(agent_id=agent_id):
            snapshot = next(iter(await reads.agents([agent_id])), None)
        case ApiKeyRequest(key_id=key_id):
            snapshot = await reads.api_key(key_id)
        case SwitchRequest(model=model, dimension=dimension):
            meta = await reads.embedding_meta()
            snapshot = await reads.reembed_pending(reembed_target(model, dimension, meta))
        case ReformRequest(session_id=session_id, agent_id=agent_id):
            snapshot = await reads.unreformed(session_id, agent_id)
        case PurgeRequest(ended_before=ended_before, limit=limit):
            snapshot = await reads.ended_unpurged(ended_before, limit)
        case _:
            snapshot = await read_lifecycle_snapshot(reads, request)
    return cast(S, snapshot)


async def run_planned[S, R](
    reads: SnapshotReads,
    request: Request[S],
    plan: Callable[[S], Plan[R]],
    apply: Callable[[Sequence[Write]], Coroutine[Any, Any, None]],
) -> R:
    """The body of every planned transaction (PlannedStore._transact), inside the backend's
    transaction: the request's snapshot, the plan on it, its writes applied in order."""
    planned = plan(await read_snapshot(reads, request))
    await apply(planned.writes)
    return planned.result


def run_sync[R](coroutine: Coroutine[Any, Any, R]) -> R:
    """The result of a coroutine that never suspends: reads over a blocking connection, run on
    the thread that owns the connection. A suspension is a bug (there is no loop to resume it)."""
    try:
        coroutine.send(None)
    except StopIteration as finished:
        return cast(R, finished.value)
    coroutine.close()
    raise RuntimeError("a synchronous snapshot read suspended")
