"""The data-lifecycle calls of the store contract (imports, forget_user), planned once for both
backends like memory.store.planned: a request, a planner in memory.store.rules, the backend's
``_transact``."""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from itertools import groupby

import numpy as np

from memory.logging import get_logger
from memory.models import AgentConfig, ConsolidatedMemory, Fact, Reflection, StoredMessage
from memory.store.base import Vector
from memory.store.counts import (
    BlobImport,
    Erasure,
    ExportData,
    ForgetCounts,
    ImportCounts,
    SessionPeople,
)
from memory.store.rules import export as rx
from memory.store.rules.erasure import (
    EraseAllRequest,
    ForgetRequest,
    plan_erase_all,
    plan_forget,
)
from memory.store.rules.import_erasures import Known, erasures_request, plan_import_erasures
from memory.store.rules.import_sessions import plan_import_session, session_import_request
from memory.store.rules.imports import (
    AgentsRequest,
    BlobImportRequest,
    ReflectionImportRequest,
    fact_import_request,
    plan_import_agents,
    plan_import_consolidated,
    plan_import_facts,
    plan_import_reflections,
    session_keys,
)
from memory.store.rules.repair_parted import plan_repair
from memory.store.rules.writes import Plan, Request
from memory.store.shared_reads import SharedReads
from memory.store.snapshots_lifecycle import parted_sessions

# How many states one write of _open_unmarked opens at the most.
UNMARKED_BATCH = 500


class PlannedLifecycle(SharedReads):
    @abc.abstractmethod
    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R: ...

    @abc.abstractmethod
    async def _user_agents(self, user_id: str) -> list[str]:
        """Agents holding anything of the user (facts, reflections, blobs, sessions), sorted."""

    @abc.abstractmethod
    async def _export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool
    ) -> ExportData:
        """export_data as the backend reads it, in one read snapshot (rules.export.export_view)."""

    async def export_data(
        self, *, agent_id: str | None, user_id: str | None, messages: bool, facts: bool = True
    ) -> ExportData:
        data = await self._export_data(
            agent_id=agent_id, user_id=user_id, messages=messages, facts=facts
        )
        if agent_id is None:
            return data
        unheld = rx.unheld(agent_id, data)
        # Ids only, and few (forgotten users): one read each, after the snapshot.
        strangers = {u for u in unheld if agent_id not in await self._user_agents(u)}
        return rx.without_every_agent_forgets(data, strangers) if strangers else data

    async def import_agents(self, configs: Sequence[AgentConfig]) -> ImportCounts:
        ids = tuple(dict.fromkeys(c.agent_id for c in configs))
        return await self._transact(
            AgentsRequest(ids), lambda existing: plan_import_agents(configs, existing)
        )

    async def import_facts(
        self, facts: Sequence[Fact], vectors: Sequence[Vector], *, known: Known = ()
    ) -> ImportCounts:
        lists = [[float(x) for x in np.asarray(v, dtype=np.float32).reshape(-1)] for v in vectors]
        return await self._transact(
            fact_import_request(facts, known),
            lambda snapshot: plan_import_facts(facts, lists, snapshot),
        )

    async def import_consolidated(
        self,
        blobs: Sequence[ConsolidatedMemory],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> dict[str, BlobImport]:
        keys = tuple(dict.fromkeys(b.scope_key.key for b in blobs))
        pairs = tuple(
            dict.fromkeys(
                (b.scope_key.agent_id, b.scope_key.user_id) for b in blobs if b.scope_key.user_id
            )
        )
        scopes = session_keys(b.scope_key for b in blobs)
        return await self._transact(
            BlobImportRequest(keys, pairs, tuple(sessions), scopes, known),
            lambda snapshot: plan_import_consolidated(blobs, snapshot),
        )

    async def import_reflections(
        self,
        reflections: Sequence[Reflection],
        *,
        sessions: Sequence[SessionPeople] = (),
        known: Known = (),
    ) -> ImportCounts:
        keys = [r.scope_key for r in reflections]
        request = ReflectionImportRequest(
            reflection_ids=tuple(dict.fromkeys(r.reflection_id for r in reflections)),
            keys=tuple(dict.fromkeys(k.key for k in keys)),
            pairs=tuple(dict.fromkeys((k.agent_id, k.user_id) for k in keys if k.user_id)),
            sessions=tuple(sessions),
            session_keys=session_keys(keys),
            known=known,
        )
        return await self._transact(
            request, lambda snapshot: plan_import_reflections(reflections, snapshot)
        )

    async def import_erasures(self, rows: Sequence[Erasure]) -> ImportCounts:
        if not rows:
            return ImportCounts()
        return await self._transact(
            erasures_request(rows), lambda stored: plan_import_erasures(rows, stored)
        )

    async def import_messages(
        self,
        messages: Sequence[StoredMessage],
        *,
        sessions_created: Mapping[str, datetime] | None = None,
        withheld: Mapping[str, Mapping[str, Mapping[str, int]]] | None = None,
        cursors: Mapping[str, Mapping[str, int]] | None = None,
        switches: Mapping[str, Mapping[str, Mapping[int, tuple[bool, bool]]]] | None = None,
        known: Known = (),
    ) -> ImportCounts:
        """One transaction per session (a session's messages are imported together)."""
        total = ImportCounts()
        ordered = sorted(messages, key=lambda m: (m.session_id, m.seq))
        for session_id, group in groupby(ordered, key=lambda m: m.session_id):
            batch = list(group)
            created = (sessions_created or {}).get(session_id)
            marks = (withheld or {}).get(session_id)
            there = (cursors or {}).get(session_id)
            under = (switches or {}).get(session_id)
            req = session_import_request(session_id, batch, created, marks, there, under, known)
            total += await self._transact(req, partial(plan_import_session, req, batch))
        return total

    async def forget_user(
        self, user_id: str, *, agent_id: str | None, at: datetime
    ) -> list[ForgetCounts]:
        if agent_id is None:
            # First the tombstone for every agent: from here on no formation of any agent
            # commits for the user, whatever the order of the agents' transactions below.
            await self._transact(
                EraseAllRequest(user_id), lambda epoch: plan_erase_all(user_id, epoch, at)
            )
            agents = await self._user_agents(user_id)
        else:
            agents = [agent_id]
        counts = []
        for agent in agents:
            req = ForgetRequest(agent, user_id, all_agents=agent_id is None)
            counts.append(await self._transact(req, partial(plan_forget, req, at=at)))
        return counts

    async def _upgrade_at_start(self) -> None:
        """What every start runs on every backend once its schema is up: the switch marks
        opened of the states recorded into before they were kept (memory.switch_marks.opened),
        agent by agent and a batch at a time, then rules.repair_parted."""
        agents = await self._read_once(lambda reads: reads.agents(None))
        for agent_id in sorted(a.agent_id for a in agents):
            while await self._open_unmarked(agent_id):
                pass
        await self._repair_parted()

    @abc.abstractmethod
    async def _open_unmarked(self, agent_id: str) -> int:
        """memory.switch_marks.opened of the agent (read anew: a change of its switches meanwhile
        is either before the batch or after it, states already opened) appended to at most
        UNMARKED_BATCH of its states with messages to form and no open stretch; how many."""

    async def _repair_parted(self) -> int:
        """rules.repair_parted, at every start: the sessions found on one read, each repaired
        in a transaction of its own (decided again there). How many were."""
        repaired = 0
        for req in await self._read_once(parted_sessions):
            repaired += await self._transact(req, partial(plan_repair, req))
        if repaired:
            get_logger().info("sessions a forget left without their user repaired", count=repaired)
        return repaired
