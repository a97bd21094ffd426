"""forget_user also deletes the user's closed workflow executions: their id is in the workflow
ids and search attributes, and without a codec key their fact texts in the payloads. Real dev
server (search attributes and visibility)."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli import common as cli_common
from cli.app import app
from cli.binaries import temporal_cli
from memory.models import ScopeKey
from memory.settings import TemporalSettings
from runtime.erasure import user_executions_query
from runtime.payloads import payload_data_converter
from runtime.starts import request_consolidation
from tests.harness import Harness, conversation, facts, reflections
from workflows.naming import ALL_KEYS, consolidation_workflow_id


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


def _closed(*workflow_ids: str) -> str:
    listed = ", ".join(f"'{i}'" for i in workflow_ids)
    return f"WorkflowId IN ({listed}) AND ExecutionStatus != 'Running'"


def _session_runs(session: str) -> tuple[str, ...]:
    key = ScopeKey.session("eve", session)
    return (f"form:eve:{session}", f"end:eve:{session}", consolidation_workflow_id(key))


async def _forget_bob(
    how: str, h: Harness, tmp_path: Path, bob: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int | None]:
    """Forget bob through the client or `mnemos forget`: (sessions deleted, executions deleted)."""
    if how == "client":
        result = await h.memory.forget_user("eve", bob)
        return result.agents[0].sessions, result.workflow_executions_deleted
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)
    cli_env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),  # Harness.open_store
        "MNEMOS_TEMPORAL__ADDRESS": h.client.service_client.config.target_host,
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }
    args = ["forget", "--agent", "eve", "--user", bob, "--json"]
    ran = await asyncio.to_thread(CliRunner().invoke, app, args, env=cli_env)
    assert ran.exit_code == 0, ran.stderr
    out = json.loads(ran.stdout)
    return out["agents"][0]["sessions"], out["workflow_executions_deleted"]


@pytest.mark.parametrize("how", ["client", "cli"])
async def test_forget_deletes_the_runs_of_the_session_memory_it_deleted(
    forget_env: WorkflowEnvironment, tmp_path: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob alone in a session: its end consolidates the session memory, drafted from his words,
    in a run tagged with no user. Forgetting bob deletes the session with its memory, and that
    run too (and his reflections' run); a session he shares with carol stays, and its runs."""
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    h = await Harness.create(
        forget_env, tmp_path, temporal=TemporalSettings(task_queue=queue, search_attributes=True)
    )
    bob, carol = f"bob-{queue}", f"carol-{queue}"
    alone, shared = f"alone-{queue}", f"shared-{queue}"
    await h.record(alone, conversation(4, user=bob))
    await h.record(shared, conversation(2, user=bob, prefix="b"))
    await h.record(shared, conversation(2, user=carol, start=2, prefix="c"))
    h.llm.script(
        "extract_reflections",
        reflections(
            user=["Bob prefers short answers"],
            session=["Bob is recovering from knee surgery at home"],
            speaker=bob,
        ),
    )
    bobs_scope = ScopeKey.user("eve", bob)
    async with h.worker():
        await asyncio.wait_for(h.memory.on_session_end("eve", alone), 60)
        await asyncio.wait_for(h.memory.on_session_end("eve", shared), 60)
        # His reflections' run, tagged with him: the forget found it before.
        await (await request_consolidation(h.client, h.settings, bobs_scope, force=True)).result()
    blob = await h.store.get_consolidated(ScopeKey.session("eve", alone))
    assert blob is not None and "knee surgery" in blob.content
    gone = _closed(*_session_runs(alone), consolidation_workflow_id(bobs_scope))
    assert len(await _until(forget_env, gone, 4)) == 4
    kept = sorted(await _until(forget_env, _closed(*_session_runs(shared)), 3))
    assert kept == sorted(_session_runs(shared))

    sessions, deleted = await _forget_bob(how, h, tmp_path, bob, monkeypatch)

    assert sessions == 1  # the session bob was alone in, with its memory
    assert deleted == 4
    assert await _until(forget_env, gone, 0) == []
    # Carol's session stays in the store, and so do its runs.
    assert await h.store.get_session(shared) is not None
    assert sorted(await _ids(forget_env, _closed(*_session_runs(shared)))) == kept
