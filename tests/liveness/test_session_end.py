"""Issue #12 case 6, session end: the end of a session is a workflow of its own, so an
``on_session_end`` whose wait breaks (the Temporal server restarted under it, the caller gone) still
ends with the session formed, its session scope consolidated and the session marked ended."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import RetrySettings
from tests.harness import Harness, conversation, facts, reflections
from tests.liveness.temporal_server import RestartableServer
from workflows.naming import session_end_workflow_id
from workflows.summary import SessionEndSummary


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RestartableServer]:
    s = RestartableServer(tmp_path)
    try:
        yield s
    finally:
        await s.stop()


async def test_session_end_whose_wait_breaks_still_consolidates(
    server: RestartableServer, tmp_path: Path
) -> None:
    env = await server.start()
    h = await Harness.create(env, tmp_path)
    # A worker cut off by the restart is noticed in seconds.
    h.settings = h.settings.model_copy(
        update={
            "retries": RetrySettings(
                llm_heartbeat_seconds=2,
                store_heartbeat_seconds=2,
                llm_initial_interval_seconds=0.1,
                store_initial_interval_seconds=0.1,
            )
        }
    )
    await h.record("s1", conversation(6))
    extracting, restarted = asyncio.Event(), asyncio.Event()

    async def slow_facts(_: LLMRequest) -> ExtractedFacts:
        extracting.set()
        await restarted.wait()
        return facts(("Alice plays the cello", "user"))

    h.llm.script("extract_facts", slow_facts)
    h.llm.script("extract_reflections", reflections(session=["Alice is preparing a recital"]))
    memory = h.memory

    async with h.worker():
        waiting = asyncio.create_task(memory.on_session_end("eve", "s1"))
        await extracting.wait()
        await server.stop()  # the caller's wait breaks here...
        waiting.cancel()  # ...or its process is gone: either way nobody waits any more
        with contextlib.suppress(BaseException):
            await waiting
        assert waiting.cancelled() or waiting.exception() is not None  # no result came back

        fresh = await server.start()
        restarted.set()
        handle = fresh.client.get_workflow_handle(
            session_end_workflow_id("eve", "s1"), result_type=SessionEndSummary
        )
        ended = await asyncio.wait_for(handle.result(), timeout=120)

    assert ended.formation.messages_formed == 6
    assert ended.consolidation.absorbed == 1
    session = await h.store.get_session("s1", agent_id="eve")  # ending is the agent's own
    assert session is not None and session.ended_at is not None
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (6, 0)
    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and "recital" in blob.content
    assert await h.buffered(h.key("session")) == []
