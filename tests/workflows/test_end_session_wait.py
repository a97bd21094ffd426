"""EndSession waits on its formation with durable timers: the whole budget of a slow local model
(a 600 s LLM timeout allows ~13.5 h) fits its history, far below Temporal's hard limit of 51,200
events, at which the server terminates a run (at 10 s a look, it came to ~53,000)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from memory.pipeline.types import FormationRequest
from memory.settings import RetrySettings, TemporalSettings
from runtime.payloads import payload_data_converter
from tests.fakes import transient
from tests.harness import Harness, conversation, reflections
from worker import build_worker
from workflows.consolidate_scope import ConsolidateScopeWorkflow
from workflows.end_session import EndSessionWorkflow
from workflows.naming import FORM_WORKFLOW
from workflows.summary import FormationSummary


@workflow.defn(name=FORM_WORKFLOW)
class _StillDraining:
    """A formation that never ends (a drain behind a model slower than every budget)."""

    @workflow.signal
    def request(self, force: bool = False) -> None:
        pass

    @workflow.run
    async def run(self, req: FormationRequest) -> FormationSummary:
        await workflow.wait_condition(lambda: False)
        return FormationSummary()


async def test_a_wait_through_the_whole_budget_keeps_a_short_history(tmp_path: Path) -> None:
    # A time-skipping server of its own: the stand-in formation never ends, and the wait skips
    # the server's clock ~13 h ahead; on the shared one a later test's form:eve:s1 would join it.
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        await _wait_through_the_budget(env, tmp_path)
    finally:
        await env.shutdown()


async def _wait_through_the_budget(env: WorkflowEnvironment, tmp_path: Path) -> None:
    h = await Harness.create(
        env,
        tmp_path,
        temporal=TemporalSettings(
            task_queue=f"end-{uuid.uuid4().hex[:8]}", search_attributes=False
        ),
        retries=RetrySettings(llm_timeout_seconds=600),
    )
    await h.record("s1", conversation(2))
    workflows = [_StillDraining, EndSessionWorkflow, ConsolidateScopeWorkflow]
    async with build_worker(h.client, h.deps, h.settings, workflows=workflows):
        handle = await h.memory.end_session("eve", "s1")
        with pytest.raises(WorkflowFailureError) as failed:
            await asyncio.wait_for(handle.result(), 600)
        history = await handle.fetch_history()

    # Stuck, it adds no event to its history: that is caught, after a budget without progress.
    assert "made no progress for" in str(failed.value.cause)
    assert len(history.events) < 15_000


@workflow.defn(name=FORM_WORKFLOW)
class LongDrain:
    """A formation that drains for one and a half times the end's budget, each window moving
    its run on (here a durable timer a window: its history grows, as a real drain's makes it)."""

    @workflow.signal
    def request(self, force: bool = False) -> None:
        pass

    @workflow.run
    async def run(self, req: FormationRequest) -> FormationSummary:
        for _ in range(15):
            await workflow.sleep(BUDGET_SECONDS / 10)
        return FormationSummary(messages_formed=2)


RETRIES = RetrySettings(llm_timeout_seconds=30, llm_max_attempts=1, stale_decision_seconds=1)
BUDGET_SECONDS = 30 * 16.0 + 1  # the end's wait (workflows/end_session.py _polled) with RETRIES


async def test_the_end_of_a_long_healthy_drain_waits_while_it_moves_on(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A fixed budget failed the end of a backlog longer than it ("still running after"), though
    nothing had failed: 625 windows of a 50,000-message session at 8 s a call. The budget is a
    wait without progress now."""
    queue = TemporalSettings(task_queue=f"end-{uuid.uuid4().hex[:8]}", search_attributes=False)
    h = await Harness.create(time_env, tmp_path, retries=RETRIES, temporal=queue)
    await h.record("s1", conversation(2))
    workflows = [LongDrain, EndSessionWorkflow, ConsolidateScopeWorkflow]
    async with build_worker(h.client, h.deps, h.settings, workflows=workflows):
        handle = await h.memory.end_session("eve", "s1")
        ended = await asyncio.wait_for(handle.result(), 600)

    assert ended.formation.messages_formed == 2


async def test_the_end_waits_while_its_consolidation_waits_out_an_outage_past_its_budget(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The session's consolidation meets a provider outage and waits on durable timers, 5 minutes
    doubling (jittered): the third wait, 10 to 30 minutes, is longer than the end's budget of
    these retries (8 minutes) and adds no event while it lasts. The run is waiting, not stuck
    (it says until when in its memo): the end waits it out and answers (h189; it failed with
    "made no progress")."""
    queue = TemporalSettings(task_queue=f"end-{uuid.uuid4().hex[:8]}", search_attributes=False)
    h = await Harness.create(time_env, tmp_path, retries=RETRIES, temporal=queue)
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(session=["Alice is planning a trip"]))
    h.llm.script("consolidate", *[transient("provider down")] * 3)
    async with h.worker():
        handle = await h.memory.end_session("eve", "s1")
        ended = await asyncio.wait_for(handle.result(), 600)

    assert ended.consolidation.consolidations == 1 and ended.consolidation.degraded is None
    assert len(h.llm.calls("consolidate")) == 4
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None
