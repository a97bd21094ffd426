"""A newer build's workflow may send a Window with a field this build does not know (a rolling
deploy, or a rollback). The extraction activities are scheduled with fewer arguments than they
take, so the SDK hands them untyped values: they must read those as tolerantly as the payload
converter reads typed ones (runtime/payloads.py), or every formation fails on this build."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment

from memory.models import MessageIn
from memory.settings import TemporalSettings
from tests.harness import T0, Harness
from worker import build_worker


@workflow.defn(name="NewerBuild")
class NewerBuild:
    @workflow.run
    async def run(self, req: dict[str, Any]) -> list[str]:
        opts: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=20),
            "retry_policy": RetryPolicy(maximum_attempts=1),
        }
        window = await workflow.execute_activity("load_formation_window", req, **opts)
        window["a_field_of_a_newer_build"] = 1
        out = []
        for name, args in (
            ("extract_facts", [window]),
            ("extract_reflections", [window, []]),
            ("find_similar_facts", [window, []]),
        ):
            try:
                await workflow.execute_activity(name, args=args, **opts)
                out.append(f"{name}: ok")
            except ActivityError as err:  # each step's outcome is reported
                out.append(f"{name}: {type(err.cause).__name__}: {str(err.cause)[:160]}")
        return out


async def test_a_window_from_a_newer_build_is_formed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    temporal = TemporalSettings(
        task_queue="tq-newer-build", search_attributes=False, workflow_sandbox=False
    )
    h = await Harness.create(time_env, tmp_path, temporal=temporal)
    message = MessageIn(
        message_id="m1", role="user", user_id="alice", content="I live in Lisbon.", created_at=T0
    )
    await h.record("s1", [message])
    async with build_worker(h.client, h.deps, h.settings, workflows=[NewerBuild]):
        out = await h.client.execute_workflow(
            "NewerBuild",
            {"session_id": "s1", "agent_id": "eve", "force": True},
            id="newer-build",
            task_queue=h.settings.temporal.task_queue,
        )
    assert out == ["extract_facts: ok", "extract_reflections: ok", "find_similar_facts: ok"]
