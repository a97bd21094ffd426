"""Kill a real worker process in the middle of a formation (SIGKILL: no clean-up runs), start another,
and check the run completes with every promise intact. Real dev server, real processes."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from pydantic import SecretStr
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from client.memory_client import MemoryClient
from memory.ids import content_hash
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.settings import (
    CodecSettings,
    RetrySettings,
    Settings,
    StoreSettings,
    TemporalSettings,
)
from memory.store import open_store
from runtime.codec import ENCODING, data_converter
from tests.conftest import fresh_schema
from tests.harness import T0
from worker import WORKFLOWS

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((ROOT / "samples" / "conversation.json").read_text())


async def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"worker exited early with {proc.returncode}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path.name} not reached in {timeout}s")
        await asyncio.sleep(0.05)


# The reflection step is killed with the codec on: the same gate and recovery as without it, plus
# encrypted payloads (a plain run of it added 15 s to make test and nothing the others miss).
CASES = [
    pytest.param("decide_facts", False, "sqlite", id="decide"),
    pytest.param("extract_reflections", True, "sqlite", id="reflections-codec"),
    pytest.param(
        "decide_facts", False, "postgres", id="decide-postgres", marks=pytest.mark.postgres
    ),
]


@pytest.mark.parametrize(("gate_task", "encrypted", "backend"), CASES)
async def test_worker_killed_mid_formation(
    dev_env: WorkflowEnvironment,
    tmp_path: Path,
    gate_task: str,
    encrypted: bool,
    backend: str,
    request: pytest.FixtureRequest,
) -> None:
    # With a codec key the worker processes and this client encrypt every payload.
    codec = CodecSettings(key=base64.b64encode(os.urandom(32)).decode() if encrypted else None)
    config = dev_env.client.config()
    config["data_converter"] = data_converter(codec)
    client = Client(**config)
    if backend == "postgres":
        dsn = fresh_schema(request.getfixturevalue("postgres_dsn"))
        store_settings = StoreSettings(backend="postgres", postgres_dsn=SecretStr(dsn))
    else:
        store_settings = StoreSettings(sqlite_path=tmp_path / "mnemos.db")
    settings = Settings(
        codec=codec,
        store=store_settings,
        # A dead worker's LLM call is noticed after this heartbeat timeout (production: 20 s).
        retries=RetrySettings(llm_heartbeat_seconds=2, llm_initial_interval_seconds=0.1),
        temporal=TemporalSettings(
            address=dev_env.client.service_client.config.target_host,
            task_queue=f"crash-{uuid.uuid4().hex[:8]}",
        ),
    )
    store = await open_store(settings)
    memory = MemoryClient(client, store, settings)
    agent = AgentConfig.model_validate(SAMPLE["agent"])
    await memory.register_agent(agent)
    msgs = [MessageIn.model_validate(m) for m in SAMPLE["messages"]]
    if gate_task == "decide_facts":
        # A stored fact the window corrects, so the model decides (a repeat is decided by rule).
        corrected = msgs[2].model_copy(
            update={"content": msgs[2].content.replace("$50,000", "$40,000")}
        )
        assert corrected.content != msgs[2].content
        await memory.record_messages(agent.agent_id, "seed", [*msgs[:2], corrected, msgs[3]])
    await memory.record_messages(agent.agent_id, "s1", msgs)

    env = {
        **os.environ,
        "MNEMOS_STORE__BACKEND": backend,
        "MNEMOS_STORE__SQLITE_PATH": str(settings.store.sqlite_path),
        **({"MNEMOS_STORE__POSTGRES_DSN": dsn} if backend == "postgres" else {}),
        "MNEMOS_TEMPORAL__ADDRESS": settings.temporal.address,
        "MNEMOS_TEMPORAL__TASK_QUEUE": settings.temporal.task_queue,
        "CRASH_GATE_DIR": str(tmp_path),
        "CRASH_GATE_TASK": gate_task,
        # The run's next workflow task, put on the killed worker's sticky queue, goes to the
        # survivor after 1 s instead of the SDK's 10 s (tests/crash_worker.py).
        "MNEMOS_TEMPORAL__STICKY_QUEUE_SECONDS": "1",
        **({"MNEMOS_CODEC__KEY": codec.key.get_secret_value()} if codec.key else {}),
    }

    def spawn() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "tests.crash_worker"], cwd=ROOT, env=env)

    if gate_task == "decide_facts":
        (tmp_path / "release").touch()
        first = spawn()
        try:
            await memory.form_memories(agent.agent_id, "seed")
        finally:  # a failed seed leaves no worker behind
            first.kill()
            first.wait()
        (tmp_path / "release").unlink()
        (tmp_path / "reached").unlink(missing_ok=True)

    victim = spawn()
    try:
        handle = await memory._start_formation(agent.agent_id, "s1", force=True)
        await _wait_for(tmp_path / "reached", victim)
        victim.kill()  # SIGKILL in the middle of the gated LLM call
        victim.wait()
        (tmp_path / "release").touch()
        survivor = spawn()
        try:
            summary = await asyncio.wait_for(handle.result(), timeout=120)
        finally:
            survivor.terminate()
            survivor.wait(10)
    finally:
        if victim.poll() is None:
            victim.kill()

    assert summary.formations == 1
    state = await store.get_session_agent_state("s1", agent.agent_id)
    assert state is not None and state.cursor_seq == len(msgs) and state.pending_messages == 0
    assert state.formations == 1
    facts = await store.recent_facts(
        FactFilter(agent_id=agent.agent_id, user_id="alice"),
        since=T0.replace(year=2000),
        limit=1000,
    )
    hashes = [content_hash(f.content) for f in facts]
    assert facts and len(hashes) == len(set(hashes))  # nothing written twice
    history = await handle.fetch_history()
    attempts = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
    ]
    assert max(attempts) >= 2  # the killed attempt really was retried elsewhere
    if encrypted:
        # The history holds ciphertext only, and replays with the key.
        raw = b"".join(e.SerializeToString() for e in history.events)
        assert ENCODING in raw
        assert all(f.content.encode() not in raw for f in facts)
        replayer = Replayer(workflows=list(WORKFLOWS), data_converter=data_converter(codec))
        await replayer.replay_workflow(history)
    await store.close()
