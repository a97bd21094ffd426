"""A formation pass reads its window and its dedup candidates as local activities (markers in the
history, no task-queue round trip through the server) and schedules only the LLM steps and the
commit. Run the way workers run by default: outside the SDK's sandbox."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.harness import CORRECTION, Harness, a_fact_then_its_correction, reflections
from workflows.naming import formation_workflow_id


async def test_reads_are_local_and_steps_are_scheduled(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    default_runner = h.settings.temporal.model_copy(update={"workflow_sandbox": False})
    h.settings = h.settings.model_copy(update={"temporal": default_runner})
    await a_fact_then_its_correction(h)
    h.llm.script("decide_facts", CORRECTION)
    h.llm.script("extract_reflections", reflections())
    h.llm.script("extract_reflections", reflections())
    async with h.worker():
        await h.form("s0")
        summary = await h.form("s1")
        history = await h.client.get_workflow_handle(
            formation_workflow_id("eve", "s1")
        ).fetch_history()

    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    local = [
        e
        for e in history.events
        if e.HasField("marker_recorded_event_attributes")
        and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    assert scheduled == [
        "extract_facts",
        "decide_fact_changes",
        "extract_reflections",
        "commit_formation",
    ]
    assert len(local) == 2  # the window, then the candidates the UPDATE was decided against
    assert summary.decisions == {"UPDATE": 1}
    assert [f.content for f in await h.all_facts()] == ["Alice works at Acme Robotics as CTO"]
