"""Make each step fail, transiently and for good, and check the promises afterwards:
no message formed twice, no reflection lost, no fact or reflection written twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.pipeline.types import ConsolidationRequest
from memory.prompts.decide_facts import FactDecision, FactDecisions
from tests.fakes import Faults, FaultyProxy, permanent, transient
from tests.harness import Harness, conversation, facts, reflections
from workflows.consolidate_scope import ConsolidateScopeWorkflow
from workflows.naming import consolidation_workflow_id

EXPECTED_FACTS = [("Alice works at Acme Robotics as CTO", 2), ("Bob Martins leads logistics", 1)]


def _update_first(request: LLMRequest) -> FactDecisions:
    return FactDecisions(
        decisions=[
            FactDecision(
                new_fact_index=0,
                event="UPDATE",
                existing_index=0,
                merged_text="Alice works at Acme Robotics as CTO",
            )
        ]
    )


async def scenario(env: WorkflowEnvironment, tmp_path: Path) -> Harness:
    """Seeded with one fact; session s1 then yields an UPDATE, an ADD and 4 session reflections."""
    h = await Harness.create(env, tmp_path)
    await h.record("s0", conversation(4, prefix="a"))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
    async with h.worker():
        await h.form("s0")
    await h.record("s1", conversation(4))
    h.llm.defaults["extract_facts"] = facts(
        ("Alice works at Acme Robotics as CTO", "user"), ("Bob Martins leads logistics", "agent")
    )
    h.llm.defaults["decide_facts"] = _update_first
    h.llm.defaults["extract_reflections"] = reflections(
        session=["goal one", "goal two", "goal three", "goal four"]
    )
    return h


async def assert_formed_exactly_once(h: Harness) -> None:
    stored = sorted((f.content, f.version) for f in await h.all_facts())
    assert stored == EXPECTED_FACTS
    state = await h.store.get_session_agent_state("s1", "eve")
    assert (
        state is not None
        and state.cursor_seq == 4
        and state.pending_messages == 0
        and state.formations == 1
    )
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and blob.version == 1
    assert all(f"- goal {n}" in blob.content for n in ("one", "two", "three", "four"))
    assert await h.buffered(h.key("session")) == []


async def assert_nothing_written(h: Harness) -> None:
    assert [(f.content, f.version) for f in await h.all_facts()] == [
        ("Alice works at Acme Robotics", 1)
    ]
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 0 and state.pending_messages == 4
    assert await h.buffered(h.key("session")) == []


STORE_FAULTS = {
    "load_formation_window": ("get_session_agent_state", Faults(before=2)),
    "commit_formation (before write)": ("commit_formation", Faults(before=2)),
    "commit_formation (reply lost after write)": ("commit_formation", Faults(after=1)),
    "apply_consolidation (reply lost after write)": ("commit_consolidation", Faults(after=1)),
}
LLM_FAULTS = ["extract_facts", "decide_facts", "extract_reflections", "consolidate"]


@pytest.mark.parametrize("step", list(STORE_FAULTS))
async def test_transient_store_failures_change_nothing_in_the_outcome(
    time_env: WorkflowEnvironment, tmp_path: Path, step: str
) -> None:
    h = await scenario(time_env, tmp_path)
    method, fault = STORE_FAULTS[step]
    h.worker_store = FaultyProxy(h.store, {method: fault})  # type: ignore[assignment]
    async with h.worker():
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    assert fault.before == 0 and fault.after == 0  # every injected failure happened
    await assert_formed_exactly_once(h)


@pytest.mark.parametrize("task", LLM_FAULTS)
async def test_transient_llm_failures_change_nothing_in_the_outcome(
    time_env: WorkflowEnvironment, tmp_path: Path, task: Any
) -> None:
    h = await scenario(time_env, tmp_path)
    seeded_calls = len(h.llm.calls(task))
    h.llm.script(task, transient(), transient())
    async with h.worker():
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    assert len(h.llm.calls(task)) - seeded_calls == 3  # two failures, one success
    await assert_formed_exactly_once(h)


async def test_transient_embedding_failure_changes_nothing(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await scenario(time_env, tmp_path)
    fault = Faults(before=2, error=transient())
    h.embedder = FaultyProxy(h.embedder, {"embed": fault})  # type: ignore[assignment]
    async with h.worker():
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    await assert_formed_exactly_once(h)


@pytest.mark.parametrize("task", ["extract_facts", "decide_facts", "extract_reflections"])
async def test_permanent_llm_failure_writes_nothing_and_a_later_run_forms_once(
    time_env: WorkflowEnvironment, tmp_path: Path, task: Any
) -> None:
    h = await scenario(time_env, tmp_path)
    h.llm.script(task, permanent())
    async with h.worker():
        with pytest.raises(WorkflowFailureError):
            await h.form("s1")
        await assert_nothing_written(h)
        await h.form("s1")  # the next trigger (hot path or cold-session job) forms the range
        await h.consolidation_result(h.key("session"))
    await assert_formed_exactly_once(h)


async def test_store_that_keeps_failing_writes_nothing_and_a_later_run_forms_once(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await scenario(time_env, tmp_path)
    h.worker_store = FaultyProxy(h.store, {"commit_formation": Faults(before=1000)})  # type: ignore[assignment]
    async with h.worker():
        with pytest.raises(WorkflowFailureError):
            await h.form("s1")
    await assert_nothing_written(h)
    h.worker_store = None
    async with h.worker():
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    await assert_formed_exactly_once(h)


async def test_failed_consolidation_keeps_the_buffer_for_the_next_one(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await scenario(time_env, tmp_path)
    h.llm.script("consolidate", permanent())
    async with h.worker():
        await h.form("s1")
        with pytest.raises(WorkflowFailureError):
            await h.consolidation_result(h.key("session"))
        assert len(await h.buffered(h.key("session"))) == 4
        handle = await h.client.start_workflow(
            ConsolidateScopeWorkflow.run,
            ConsolidationRequest(key=h.key("session"), retries=h.settings.retries),
            id=consolidation_workflow_id(h.key("session")),
            task_queue=h.settings.temporal.task_queue,
        )
        await handle.result()
    await assert_formed_exactly_once(h)
