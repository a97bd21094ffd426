"""Issue #12 case 6: with the Temporal server down, a hot trigger never fails the agent's turn: it
returns "deferred" within its budget, the messages stay stored, and the session is formed once the
server is back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from memory.settings import FormationSettings, TemporalSettings
from tests.harness import Harness, conversation
from tests.liveness.temporal_server import RestartableServer
from workflows.summary import FormationSummary

BUDGET = 1.0


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RestartableServer]:
    s = RestartableServer(tmp_path)
    try:
        yield s
    finally:
        await s.stop()


async def test_trigger_is_deferred_while_temporal_is_down_then_formed(
    server: RestartableServer, tmp_path: Path
) -> None:
    env = await server.start()
    h = await Harness.create(
        env, tmp_path, formation=FormationSettings(message_interval=4, min_messages=4)
    )
    h.settings = h.settings.model_copy(
        update={
            "temporal": TemporalSettings(
                task_queue=h.settings.temporal.task_queue,
                search_attributes=False,
                schedule_wait_seconds=BUDGET,
            )
        }
    )
    memory = h.memory  # one client for the whole test, as an agent backend holds it
    await server.stop()

    await memory.record_messages("eve", "s1", conversation(6))
    started = time.perf_counter()
    trigger = await memory.maybe_form_memories("eve", "s1")
    took = time.perf_counter() - started

    assert (trigger.started, trigger.deferred) == (False, True)
    assert took < BUDGET + 0.5
    with pytest.raises((TimeoutError, RPCError)):
        await memory.maybe_form_memories("eve", "s1", raise_errors=True)
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.pending_messages == 6  # stored, waiting

    h.client = (await server.start()).client  # the worker's connection to the restarted server
    async with h.worker():
        trigger = await memory.maybe_form_memories("eve", "s1")  # the next turn's trigger
        assert trigger.started and trigger.workflow_id
        handle: WorkflowHandle[object, FormationSummary] = memory.temporal.get_workflow_handle(
            trigger.workflow_id, result_type=FormationSummary
        )
        summary = await asyncio.wait_for(handle.result(), timeout=60)

    assert summary.messages_formed == 6
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (6, 0)
