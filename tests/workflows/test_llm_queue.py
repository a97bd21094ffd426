"""With an LLM task queue configured, the LLM-bound steps run there (where a rate limit can match
the provider's quota) and everything else stays on the main queue."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.settings import Settings, TemporalSettings
from tests.harness import Harness, conversation, facts, reflections
from worker import build_llm_worker
from workflows.naming import consolidation_workflow_id

LLM_STEPS = {"extract_facts", "decide_fact_changes", "extract_reflections", "draft_consolidation"}


async def test_llm_steps_are_routed_to_the_llm_queue(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    main_queue = h.settings.temporal.task_queue
    h.settings = Settings.model_validate(
        {
            **h.settings.model_dump(),
            "temporal": TemporalSettings(
                task_queue=main_queue,
                search_attributes=False,
                llm_task_queue=f"{main_queue}-llm",
                llm_activities_per_second=50,
            ),
        }
    )
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
