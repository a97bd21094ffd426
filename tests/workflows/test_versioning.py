"""Safe upgrades with worker versioning (runtime.versioning) on the dev server: a formation begun
by build A, whose worker stops mid-run, is finished by build B, whose workflow code changed behind
``workflow.patched``; the run forms its messages once, and the history it leaves replays on B's
code but not on the same change unpatched."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.settings import Settings
from runtime import versioning
from runtime.payloads import payload_data_converter
from tests.harness import Harness, conversation, facts, reflections
from tests.workflows import upgraded
from worker import build_worker


def _build(h: Harness, build_id: str, deployment: str) -> Settings:
    temporal = h.settings.temporal.model_copy(
        # build A's stuck step is cancelled as its worker stops (no grace), so B retries it at once
        update={"build_id": build_id, "deployment_name": deployment, "shutdown_grace_seconds": 0}
    )
    return h.settings.model_copy(update={"temporal": temporal})


def _builds(history: WorkflowHistory) -> list[str]:
    """The build of each completed workflow task, in order."""
    return [
        e.workflow_task_completed_event_attributes.deployment_version.build_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
    ]


async def test_a_formation_begun_by_build_a_is_finished_by_patched_build_b(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(dev_env, tmp_path)
    deployment = f"mnemos-{uuid.uuid4().hex[:8]}"
    old, new = _build(h, "A", deployment), _build(h, "B", deployment)
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
    midway = asyncio.Event()

    async def stuck(_: LLMRequest) -> None:  # build A's worker stops during this step
        midway.set()
        await asyncio.Event().wait()

    h.llm.script("extract_reflections", stuck, reflections(user=["Alice likes robots"]))

    async with build_worker(h.client, h.deps, old):
        await versioning.promote(h.client, old.temporal)
        handle = await h.start("s1")
        await asyncio.wait_for(midway.wait(), 30)
    assert await versioning.current_build_id(h.client, deployment) == "A"

    deps = Deps(settings=new, store=h.store, llm=h.llm, embedder=h.embedder)
    async with build_worker(h.client, deps, new, workflows=upgraded.PATCHED):
        await versioning.promote(h.client, new.temporal)
        summary = await asyncio.wait_for(handle.result(), 60)
        description = await handle.describe()

    # Formed once, completely: the fact, the reflection, the cursor past the four messages.
    assert summary.messages_formed == 4 and summary.facts_added == 1
    assert [f.content for f in await h.all_facts()] == ["Alice works at Acme Robotics"]
    assert [r.content for r in await h.buffered(h.key("user"))] == ["Alice likes robots"]
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.pending_messages == 0
    # Begun by A, finished by B, whose new code ran past the point it took over at.
    history = await handle.fetch_history()
    builds = _builds(history)
    assert builds[0] == "A" and builds[-1] == "B" and "" not in builds
    versioning_info = description.raw_description.workflow_execution_info.versioning_info
    assert versioning_info.deployment_version.build_id == "B"
    assert await description.memo_value(upgraded.FORMED_BY) == "B"
    await h.store.close()

    # The history replays on B's code; the same change without its patch would break this run.
    await Replayer(
        workflows=list(upgraded.PATCHED), data_converter=payload_data_converter
    ).replay_workflow(history)
    with pytest.raises(NondeterminismError):
        await Replayer(
            workflows=list(upgraded.UNPATCHED), data_converter=payload_data_converter
        ).replay_workflow(history)
