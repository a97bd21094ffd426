"""A formation test bench: real store (SQLite file), real workflows and activities on a Temporal test
server, scripted LLM and word-hash embeddings so every branch can be driven."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from client.memory_client import MemoryClient
from client.results import FormationTrigger
from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.models import AgentConfig, Fact, FactFilter, MessageIn, Reflection, ScopeKey
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflection, ExtractedReflections
from memory.settings import RetrySettings, Settings, TemporalSettings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder, echo_consolidation
from worker import build_worker
from workflows.cold_sessions import ColdSessionsInput, ColdSessionsResult
from workflows.naming import COLD_SESSIONS_WORKFLOW, consolidation_workflow_id
from workflows.summary import ConsolidationSummary, FormationSummary

# A day before the run's hour: the conversations are recent (the memory context shows the facts
# said within fifo_max_age_hours), never in the future, and the same for every test of a run.
T0 = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)


def facts(
    *items: tuple[str, str], speaker: str | None = "alice", sources: Sequence[int] | None = None
) -> ExtractedFacts:
    """Scripted facts; a user fact is attributed to ``speaker`` (the conversation's user); each
    cites ``sources`` (the window's message numbers, from 1), or nothing."""
    cite = list(sources) if sources is not None else None
    return ExtractedFacts(
        facts=[
            ExtractedFact(
                content=c, scope=s, speaker=speaker if s == "user" else None, sources=cite
            )
            for c, s in items
        ]
    )


def add_all(request: LLMRequest) -> FactDecisions:
    """A scripted decision step that ADDs every new fact it is asked about."""
    new = getattr(request.task_input, "new_facts", [])
    return FactDecisions(
        decisions=[
            FactDecision(new_fact_index=f.index, event="ADD", existing_index=None, merged_text=None)
            for f in new
        ]
    )


def reflections(
    agent: Sequence[str] = (),
    user: Sequence[str] = (),
    session: Sequence[str] = (),
    *,
    speaker: str | None = "alice",
) -> ExtractedReflections:
    return ExtractedReflections(
        agent_reflections=[ExtractedReflection(content=c) for c in agent],
        user_reflections=[ExtractedReflection(content=c, speaker=speaker) for c in user],
        session_reflections=[ExtractedReflection(content=c) for c in session],
    )


def conversation(
    n: int, *, user: str = "alice", start: int = 0, prefix: str = "m"
) -> list[MessageIn]:
    out = []
    for i in range(start, start + n):
        role = "user" if i % 2 == 0 else "agent"
        out.append(
            MessageIn(
                message_id=f"{prefix}{i:04d}",
                role=role,
                content=f"message {i} from {'the user' if role == 'user' else 'the agent'}",
                created_at=T0 + timedelta(minutes=i),
                user_id=user if role == "user" else None,
            )
        )
    return out


@dataclass
class FirstExtractionGate:
    """Holds the first extract_facts call until released, so a test can act while a formation
    is inside its pass (``await gate.entered.wait()``, then ``gate.release.set()``)."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def __call__(self, request: LLMRequest) -> ExtractedFacts:
        if not self.entered.is_set():
            self.entered.set()
            await self.release.wait()
        return facts()


def gate_first_extraction(h: Harness) -> FirstExtractionGate:
    gate = FirstExtractionGate()
    h.llm.defaults["extract_facts"] = gate
    return gate


async def triggered_during_a_pass(
    h: Harness, gate: FirstExtractionGate, session: str, during: Sequence[MessageIn]
) -> tuple[FormationTrigger, FormationTrigger]:
    """The hot trigger, then ``during`` recorded and the trigger again while the formation it
    started is held inside its first extraction, which then goes on. Inside ``h.worker()``."""
    first = await h.memory.maybe_form_memories(h.agent.agent_id, session)
    await gate.entered.wait()
    await h.record(session, during)
    second = await h.memory.maybe_form_memories(h.agent.agent_id, session)
    gate.release.set()
    return first, second


# What the model decides for the correction of a_fact_then_its_correction.
CORRECTION = FactDecisions(
    decisions=[
        FactDecision(
            new_fact_index=0, event="UPDATE", existing_index=0,
            merged_text="Alice works at Acme Robotics as CTO",
        )
    ]
)  # fmt: skip


async def a_fact_then_its_correction(h: Harness) -> None:
    """Sessions s0 and s1 recorded; their extractions script a fact, then the same fact
    corrected, so s1's fact has s0's as its dedup candidate."""
    await h.record("s0", conversation(4, prefix="a"))
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))


@dataclass
class Harness:
    env: WorkflowEnvironment
    client: Client
    store: MemoryStore
    llm: ScriptedLLM
    embedder: WordHashEmbedder
    settings: Settings
    agent: AgentConfig = field(default_factory=lambda: AgentConfig(agent_id="eve", name="Eve"))
    # What the worker's activities use instead of ``store`` (e.g. a failing proxy).
    worker_store: MemoryStore | None = None
    _memory: MemoryClient | None = field(default=None, init=False, repr=False)

    @staticmethod
    async def open_store(tmp_path: Path) -> MemoryStore:
        """The bench's store (not yet set up): a SQLite file; a test module may swap the backend
        (tests/conftest.py: ``store_backend``)."""
        return SQLiteStore(tmp_path / "mnemos.db")

    @classmethod
    async def create(
        cls,
        env: WorkflowEnvironment,
        tmp_path: Path,
        settings: Settings | None = None,
        **overrides: Any,
    ) -> Harness:
        base = settings or Settings()
        settings = base.model_copy(
            update={
                # the time-skipping server has no operator service to register search attributes
                # the workflow tests run in the SDK's sandbox: its checks catch non-determinism
                "temporal": TemporalSettings(
                    task_queue=f"tq-{uuid.uuid4().hex[:8]}",
                    search_attributes=False,
                    workflow_sandbox=True,
                ),
                # the test server does not skip retry backoff: keep it short
                "retries": RetrySettings(
                    llm_initial_interval_seconds=0.01,
                    store_initial_interval_seconds=0.01,
                    llm_max_interval_seconds=0.05,
                    store_max_interval_seconds=0.05,
                ),
                **overrides,
            }
        )
        store = await cls.open_store(tmp_path)
        await store.setup()
        llm = ScriptedLLM(
            defaults={
                "extract_facts": facts(),
                "extract_reflections": reflections(),
                "consolidate": echo_consolidation,
            }
        )
        h = cls(
            env=env,
            client=env.client,
            store=store,
            llm=llm,
            embedder=WordHashEmbedder(),
            settings=settings,
        )
        await store.upsert_agent(h.agent)
        return h

    @property
    def deps(self) -> Deps:
        return Deps(
            settings=self.settings,
            store=self.worker_store or self.store,
            llm=self.llm,
            embedder=self.embedder,
        )

    @property
    def memory(self) -> MemoryClient:
        """One client, as one backend process has (it holds the triggers it sent); a new one when
        a test swaps the Temporal client, store or settings."""
        m = self._memory
        if (
            m is None
            or m.temporal is not self.client
            or m.store is not self.store
            or m.settings is not self.settings
        ):
            m = self._memory = MemoryClient(
                self.client, self.store, self.settings, embedder=self.embedder
            )
        return m

    def worker(self) -> Worker:
        return build_worker(self.client, self.deps, self.settings)

    async def record(
        self, session: str, messages: Sequence[MessageIn], agent_id: str | None = None
    ) -> None:
        await self.memory.record_messages(agent_id or self.agent.agent_id, session, messages)

    async def start(
        self, session: str, *, force: bool = True, agent_id: str | None = None
    ) -> WorkflowHandle[Any, FormationSummary]:
        return await self.memory._start_formation(
            agent_id or self.agent.agent_id, session, force=force
        )

    async def form(self, session: str, *, force: bool = True) -> FormationSummary:
        handle = await self.start(session, force=force)
        return await handle.result()

    async def cold_run(self, inp: ColdSessionsInput | None = None) -> ColdSessionsResult:
        """One run of the cold-sessions job, as the schedule fires it, to its end."""
        result: ColdSessionsResult = await self.client.execute_workflow(
            COLD_SESSIONS_WORKFLOW,
            inp or ColdSessionsInput.from_settings(self.settings),
            id=f"cold-test-{uuid.uuid4().hex[:6]}",
            task_queue=self.settings.temporal.task_queue,
            result_type=ColdSessionsResult,
        )
        return result

    @staticmethod
    async def results[R](handles: Sequence[WorkflowHandle[Any, R]]) -> list[R]:
        """Each run's result, awaited one after the other: the runs go on meanwhile. Awaited
        together (asyncio.gather), the time-skipping server's clock skips while activities run
        and stays locked afterwards (tests/conftest.py time_env)."""
        return [await handle.result() for handle in handles]

    async def consolidation_result(self, key: ScopeKey) -> ConsolidationSummary:
        handle = self.client.get_workflow_handle(
            consolidation_workflow_id(key), result_type=ConsolidationSummary
        )
        result: ConsolidationSummary = await handle.result()
        return result

    # ------------------------------------------------------------ what a user would check

    async def all_facts(
        self, user_id: str | None = "alice", include_invalid: bool = False
    ) -> list[Fact]:
        """Every valid fact the agent can see (agent scope + this user's)."""
        flt = FactFilter(agent_id=self.agent.agent_id, user_id=user_id)
        return await self.store.recent_facts(flt, since=T0 - timedelta(days=3650), limit=10_000)

    async def buffered(self, key: ScopeKey) -> list[Reflection]:
        return await self.store.unabsorbed_reflections(key)

    def key(self, scope: str, session: str = "s1", user: str = "alice") -> ScopeKey:
        if scope == "agent":
            return ScopeKey.agent(self.agent.agent_id)
        if scope == "user":
            return ScopeKey.user(self.agent.agent_id, user)
        return ScopeKey.session(self.agent.agent_id, session)
