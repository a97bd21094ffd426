"""Issue #12 case 2: twelve sessions of one agent state a new deadline at once. Every formation
completes (stale decisions are decided again, after a jittered backoff), no message is left
unformed, and the agent ends with exactly one valid deadline fact, its history holding the others.
Without a stored deadline, the twelve concurrent adds converge on one fact too (re-checked at
commit against the facts committed since their candidates were read)."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.store.base import MemoryStore
from tests.liveness.bench_setup import AGENT, STORED_DEADLINE, Bench, bench_settings, new_deadline
from tests.store.conftest import backend, mongo_uri, store  # noqa: F401 (fixtures)

SESSIONS = 12


@pytest.mark.parametrize("stored", [True, False], ids=["stored-fact", "no-stored-fact"])
async def test_contending_sessions_converge_on_one_fact(
    dev_env: WorkflowEnvironment,
    store: MemoryStore,  # noqa: F811 (the fixture)
    stored: bool,
) -> None:
    # The real dev server: real time, as the twelve contending sessions would run.
    bench = Bench(dev_env.client, store, bench_settings())
    await bench.setup()
    async with bench.worker():
        summaries = await asyncio.wait_for(bench.contend(SESSIONS, stored=stored), timeout=600)

    assert [(s.formations, s.messages_formed) for s in summaries] == [(1, 2)] * SESSIONS
    for i in range(SESSIONS):
        state = await store.get_session_agent_state(f"s-{i:02d}", AGENT.agent_id)
        assert state is not None
        assert (state.cursor_seq, state.pending_messages) == (2, 0)

    valid = [f for f in await bench.facts() if "deadline" in f.content]
    assert len(valid) == 1, [f.content for f in valid]
    # Every statement is kept: the valid fact's content or one of its earlier versions.
    said = {new_deadline(i) for i in range(SESSIONS)} | ({STORED_DEADLINE} if stored else set())
    kept = [valid[0].content, *(r.content for r in valid[0].history)]
    assert sorted(kept) == sorted(said)
