"""With an LLM task queue configured, the LLM-bound steps run there (where a rate limit can match
the provider's quota) and everything else stays on the main queue."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from memory.settings import Settings, TemporalSettings
from tests.harness import Harness, conversation, facts, reflections
from worker import build_llm_worker
from workflows.naming import consolidation_workflow_id

LLM_STEPS = {"extract_facts", "decide_fact_changes", "extract_reflections", "draft_consolidation"}


def _with_llm_queue(h: Harness, **temporal: object) -> None:
    main_queue = h.settings.temporal.task_queue
    h.settings = Settings.model_validate(
        {
            **h.settings.model_dump(),
            "temporal": TemporalSettings.model_validate(
                {
                    "task_queue": main_queue,
                    "search_attributes": False,
                    "llm_task_queue": f"{main_queue}-llm",
                    **temporal,
                }
            ),
        }
    )


async def test_llm_steps_are_routed_to_the_llm_queue(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    main_queue = h.settings.temporal.task_queue
    _with_llm_queue(h, llm_activities_per_second=50)
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice lives in Lisbon", "user")))
    h.llm.script("extract_reflections", reflections(session=["a", "b", "c", "d"]))
    llm_worker = build_llm_worker(h.client, h.deps, h.settings)
    assert llm_worker is not None
    async with h.worker(), llm_worker:
        await h.form("s1")
        await h.consolidation_result(h.key("session"))
    queues: dict[str, set[str]] = {}
    for wf_id in ("form:eve:s1", consolidation_workflow_id(h.key("session"))):
        history = await h.client.get_workflow_handle(wf_id).fetch_history()
        for e in history.events:
            if e.HasField("activity_task_scheduled_event_attributes"):
                a = e.activity_task_scheduled_event_attributes
                queues.setdefault(a.task_queue.name, set()).add(a.activity_type.name)
    assert queues[f"{main_queue}-llm"] == LLM_STEPS
    assert not queues[main_queue] & LLM_STEPS
    assert [f.content for f in await h.all_facts()] == ["Alice lives in Lisbon"]


@pytest.mark.parametrize("concurrency", [1, None])
async def test_a_one_slot_model_gets_one_call_at_a_time(
    time_env: WorkflowEnvironment, tmp_path: Path, concurrency: int | None
) -> None:
    """Four sessions form at once against a server that answers one request at a time. With
    ``llm_concurrency`` 1 the calls wait in the task queue, never at the server, where their
    timeouts would run; without it they reach the server together."""
    h = await Harness.create(time_env, tmp_path)
    _with_llm_queue(h, llm_concurrency=concurrency)
    in_flight, most = 0, 0
    second = asyncio.Event()

    async def one_slot(answer: ExtractedFacts | ExtractedReflections) -> object:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        if in_flight > 1:
            second.set()
        try:  # long enough for a concurrent call to arrive, if any can
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(second.wait(), 0.3)
        finally:
            in_flight -= 1
        return answer

    def extract(request: LLMRequest) -> object:
        return one_slot(ExtractedFacts(facts=[]))

    def reflect(request: LLMRequest) -> object:
        return one_slot(reflections(session=["planning a trip"]))

    h.llm.defaults["extract_facts"] = extract
    h.llm.defaults["extract_reflections"] = reflect
    sessions = [f"s{i}" for i in range(4)]
    for session in sessions:
        await h.record(session, conversation(4))
    llm_worker = build_llm_worker(h.client, h.deps, h.settings)
    assert llm_worker is not None
    async with h.worker(), llm_worker:
        handles = [await h.start(session) for session in sessions]
        summaries = await h.results(handles)

    assert [s.messages_formed for s in summaries] == [4, 4, 4, 4]
    assert len(h.llm.calls("extract_facts")) == 4  # no attempt timed out
    if concurrency == 1:
        assert most == 1
    else:  # the setup does overlap calls: the cap is what keeps them apart
        assert most > 1


def test_a_cap_on_llm_steps_needs_the_llm_queue() -> None:
    with pytest.raises(ValueError, match="set llm_task_queue as well"):
        TemporalSettings(llm_concurrency=1)
