"""A forced request (a session end, the cold job) that reaches FormMemories while a run continuing
as new requests consolidation forces the next run (workflows.form_memories.CAN_KEEPS_FORCE): the
messages below the formation threshold are formed, not left for a trigger that may never come.

The dev server here suggests continue-as-new after ten history events, so the first pass's run
continues as new; the consolidation request of that step is held until the forced request is in."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from memory.settings import FormationSettings, TemporalSettings
from runtime.starts import request_consolidation
from tests.can_server import continuing_as_new
from tests.harness import Harness, conversation, gate_first_extraction, reflections
from workflows.naming import formation_workflow_id


@pytest.fixture
async def can_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of its own that suggests continue-as-new after ten history events."""
    async with continuing_as_new() as env:
        yield env


async def test_a_forced_request_during_continue_as_new_forces_the_next_run(
    can_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    temporal = TemporalSettings(
        address=can_env.client.service_client.config.target_host,
        task_queue=f"can-{uuid.uuid4().hex[:8]}",
        search_attributes=False,
        workflow_sandbox=True,
    )
    h = await Harness.create(
        can_env,
        tmp_path,
        temporal=temporal,
        formation=FormationSettings(min_messages=4, message_interval=4),
    )
    gate = gate_first_extraction(h)
    h.llm.defaults["extract_reflections"] = reflections(session=["r1", "r2", "r3", "r4"])

    requesting, go_on = asyncio.Event(), asyncio.Event()

    async def held(*args: Any, **kwargs: Any) -> None:
        requesting.set()
        await go_on.wait()
        await request_consolidation(*args, **kwargs)

    monkeypatch.setattr("activities.consolidation.request_consolidation", held)

    await h.record("s1", conversation(4))
    async with h.worker():
        run = await h.start("s1", force=False)  # the hot trigger: four messages are due
        await gate.entered.wait()
        await h.record("s1", conversation(2, start=4))  # two more: below the thresholds
        await h.start("s1", force=False)  # their turn's trigger: go round once more
        gate.release.set()
        # The pass committed, its run continues as new and first requests consolidation.
        await asyncio.wait_for(requesting.wait(), 30)
        await h.start("s1", force=True)  # the session ends: form everything left
        go_on.set()
        await asyncio.wait_for(run.result(), 60)

    workflow_id = formation_workflow_id(h.agent.agent_id, "s1")
    statuses = [
        r.status async for r in can_env.client.list_workflows(f"WorkflowId = '{workflow_id}'")
    ]
    assert WorkflowExecutionStatus.CONTINUED_AS_NEW in statuses  # the case under test happened
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None
    assert (state.pending_messages, state.cursor_seq, state.formations) == (0, 6, 2)
