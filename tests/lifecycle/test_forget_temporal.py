"""forget_user also deletes the user's closed workflow executions: their id is in the workflow
ids and search attributes, and without a codec key their fact texts in the payloads. Real dev
server (search attributes and visibility)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.settings import TemporalSettings
from runtime.erasure import user_executions_query
from tests.harness import Harness, conversation, facts


async def _ids(env: WorkflowEnvironment, query: str) -> list[str]:
    return [w.id async for w in env.client.list_workflows(query)]


async def _until(env: WorkflowEnvironment, query: str, expected: int) -> list[str]:
    """Visibility is eventually consistent, and the server deletes a closed execution in a
    background task (about 30 s on the dev server): wait, bounded, for ``expected`` runs."""
    for _ in range(240):  # 120 s
        found = await _ids(env, query)
        if len(found) == expected:
            break
        await asyncio.sleep(0.5)
    return found


async def test_forget_deletes_the_users_closed_executions(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    h = await Harness.create(
        dev_env, tmp_path, temporal=TemporalSettings(task_queue=queue, search_attributes=True)
    )
    # Users of their own: the dev server is shared by the session's tests.
    alice, bob = f"alice-{queue}", f"bob-{queue}"
    h.llm.script("extract_facts", facts(("Alice drinks green tea every morning", "user")))
    await h.record("s1", conversation(4, user=alice))
    await h.record("s2", conversation(4, user=bob, prefix="b"))
    async with h.worker():
        await h.form("s1")
        await h.form("s2")
    alice_runs = user_executions_query(alice, "eve")
    assert await _until(dev_env, alice_runs, 1) == ["form:eve:s1"]

    result = await h.memory.forget_user("eve", alice)

    assert result.workflow_executions_deleted == 1
    assert await _until(dev_env, alice_runs, 0) == []
    # Bob's run is still there.
    assert await _ids(dev_env, user_executions_query(bob, "eve")) == ["form:eve:s2"]
