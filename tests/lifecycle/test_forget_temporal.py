"""forget_user also deletes the user's closed workflow executions: their id is in the workflow
ids and search attributes, and without a codec key their fact texts in the payloads. Real dev
server (search attributes and visibility)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from memory.settings import TemporalSettings
from runtime.erasure import user_executions_query
from runtime.payloads import payload_data_converter
from tests.harness import Harness, conversation, facts
from workflows.naming import ALL_KEYS


@pytest.fixture(scope="module")
async def forget_env() -> AsyncIterator[WorkflowEnvironment]:
    """The session's dev server (tests/conftest.py dev_env) but for one setting, so a module's own.
    The server deletes a closed execution once the task that closed it is acknowledged, and it
    records acknowledgements every 30 s by default ("history.transferProcessorUpdateAckInterval"):
    until then it retries the deletion, which took 1 to 30 s by when the test ran. Recorded every
    200 ms, the deletion is the same and comes at its first retries."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        data_converter=payload_data_converter,
        search_attributes=ALL_KEYS,
        dev_server_extra_args=[
            "--ui-disable-news-fetch",
            "--dynamic-config-value",
            'history.transferProcessorUpdateAckInterval="200ms"',
        ],
    )
    try:
        yield env
    finally:
        await env.shutdown()


async def _ids(env: WorkflowEnvironment, query: str) -> list[str]:
    return [w.id async for w in env.client.list_workflows(query)]


async def _until(env: WorkflowEnvironment, query: str, expected: int) -> list[str]:
    """Visibility is eventually consistent, and the server deletes a closed execution in a
    background task: wait, bounded, for ``expected`` runs."""
    for _ in range(1200):  # 120 s
        found = await _ids(env, query)
        if len(found) == expected:
            break
        await asyncio.sleep(0.1)
    return found


async def test_forget_deletes_the_users_closed_executions(
    forget_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    h = await Harness.create(
        forget_env, tmp_path, temporal=TemporalSettings(task_queue=queue, search_attributes=True)
    )
    # Users of their own, should another test of this module use its server.
    alice, bob = f"alice-{queue}", f"bob-{queue}"
    h.llm.script("extract_facts", facts(("Alice drinks green tea every morning", "user")))
    await h.record("s1", conversation(4, user=alice))
    await h.record("s2", conversation(4, user=bob, prefix="b"))
    async with h.worker():
        await h.form("s1")
        await h.form("s2")
    alice_runs = user_executions_query(alice, "eve")
    assert await _until(forget_env, alice_runs, 1) == ["form:eve:s1"]

    result = await h.memory.forget_user("eve", alice)

    assert result.workflow_executions_deleted == 1
    assert await _until(forget_env, alice_runs, 0) == []
    # Bob's run is still there.
    assert await _ids(forget_env, user_executions_query(bob, "eve")) == ["form:eve:s2"]
