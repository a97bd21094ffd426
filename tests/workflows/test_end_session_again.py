"""A session ended, resumed and ended again while its first EndSession still forms: the second end
answers only when what was said before it is formed and consolidated too, not when the first end's
formation is done (it joined that run and returned with the later messages unformed, out of the
session blob, until the cold job came by ten minutes later). Whether the running EndSession was
started by this client (signal-with-start) or by an older one (a plain start, no signal)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.testing import WorkflowEnvironment

from memory.pipeline.types import SessionEndRequest
from tests.harness import Harness, conversation, gate_first_extraction, reflections
from workflows.naming import END_SESSION_WORKFLOW, session_end_workflow_id
from workflows.summary import SessionEndSummary


async def _formations_asked(handle: WorkflowHandle[Any, SessionEndSummary]) -> int:
    """How many times the EndSession run asked its session's formation (its rounds)."""
    history = await handle.fetch_history()
    return sum(
        e.activity_task_scheduled_event_attributes.activity_type.name == "start_session_formation"
        for e in history.events
    )


async def _older_client_end(h: Harness) -> WorkflowHandle[Any, SessionEndSummary]:
    """How a client of an older build ended a session: marked, then a plain start that joins."""
    now = h.memory.clock()
    await h.store.end_session("s1", "eve", now)
    return await h.client.start_workflow(
        END_SESSION_WORKFLOW,
        SessionEndRequest(
            session_id="s1", agent_id="eve", ended_at=now, retries=h.settings.retries
        ),
        id=session_end_workflow_id("eve", "s1"),
        task_queue=h.settings.temporal.task_queue,
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        result_type=SessionEndSummary,
    )


@pytest.mark.parametrize("first_end", ["this client", "an older client"])
async def test_a_second_end_answers_once_what_was_said_before_it_is_formed(
    time_env: WorkflowEnvironment, tmp_path: Path, first_end: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    gate = gate_first_extraction(h)  # the first end's formation is slow (a real model)
    h.llm.script(
        "extract_reflections",
        reflections(session=["Alice is preparing a recital"]),
        reflections(session=["Alice bought a new bow"]),
    )
    await h.record("s1", conversation(4))
    async with h.worker():
        if first_end == "this client":
            first = await h.memory.end_session("eve", "s1")
        else:
            first = await _older_client_end(h)
        await gate.entered.wait()
        # the user comes back, says two more things and leaves again
        await h.record("s1", conversation(2, start=4))
        second = await h.memory.end_session("eve", "s1")  # answers once the end reached the run
        gate.release.set()
        ended = await asyncio.wait_for(second.result(), 60)
        assert await asyncio.wait_for(first.result(), 60) == ended  # one run, one answer

    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (6, 0)
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and "recital" in blob.content and "new bow" in blob.content
    assert await h.buffered(h.key("session")) == []
    # one round more for the second end, and what the answer says counts both
    assert await _formations_asked(second) == 2
    assert ended.formation.messages_formed == 6
    assert (ended.consolidation.absorbed, ended.consolidation.version) == (2, 2)


async def test_one_end_forms_once(time_env: WorkflowEnvironment, tmp_path: Path) -> None:
    # The end that started the run is its start signal: no round again for it.
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    async with h.worker():
        handle = await h.memory.end_session("eve", "s1")
        ended = await asyncio.wait_for(handle.result(), 60)
        assert await _formations_asked(handle) == 1
    assert ended.formation.messages_formed == 4
