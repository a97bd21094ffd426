"""Payloads from another build: a field this build does not know is ignored, never a workflow task
that fails to decode forever (its run stuck in Running, every later trigger a signal into it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.pipeline.types import FormationRequest
from runtime.payloads import payload_data_converter
from tests.harness import Harness, conversation
from workflows.naming import FORM_WORKFLOW, formation_workflow_id
from workflows.summary import FormationSummary


def test_a_field_of_a_newer_build_is_ignored_at_any_depth() -> None:
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    newer = req.model_dump(mode="json")
    newer["priority"] = "high"
    newer["retries"]["llm_new_knob_seconds"] = 5
    [payload] = payload_data_converter.payload_converter.to_payloads([newer])
    [decoded] = payload_data_converter.payload_converter.from_payloads(
        [payload], [FormationRequest]
    )
    assert decoded == req


async def test_a_formation_requested_by_a_newer_backend_forms(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(6))
    req = FormationRequest(session_id="s1", agent_id="eve", force=True, retries=h.settings.retries)
    newer = req.model_dump(mode="json")
    newer["retries"]["llm_new_knob_seconds"] = 5  # a RetrySettings field these workers lack
    async with h.worker():
        handle = await h.client.start_workflow(
            FORM_WORKFLOW,
            newer,
            id=formation_workflow_id("eve", "s1"),
            task_queue=h.settings.temporal.task_queue,
            result_type=FormationSummary,
        )
        summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.messages_formed == 6
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (6, 0)
