"""`mnemos form FILE.json` ("Record a transcript and/or form now") registers the transcript's
agent when the store does not have it; one it has keeps its configuration. It replaced it with
the block, whose fields left out went back to their defaults: an agent whose user memory was
switched off got it back on, its tier, persona and memory instructions reset, without a word
(h197)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli.app import app
from memory.models import AgentConfig
from memory.store.sqlite import SQLiteStore


async def test_forming_a_transcript_keeps_the_agents_configuration(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    db = tmp_path / "mnemos.db"
    store = SQLiteStore(db)
    await store.setup()
    configured = AgentConfig(
        agent_id="eve",
        name="Eve",
        persona="A careful producer",
        memory_instructions="Never keep health details",
        user_memory_enabled=False,
        tier=2,
    )
    await store.upsert_agent(configured)
    said = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    transcript = {
        "agent": {"agent_id": "eve", "name": "Eve"},
        "session_id": "imported-1",
        "messages": [
            {"message_id": "t1", "role": "user", "user_id": "alice", "created_at": said,
             "content": "I was diagnosed with asthma last year"},
        ],
    }  # fmt: skip
    path = tmp_path / "t.json"
    path.write_text(json.dumps(transcript))
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(db),
        "MNEMOS_TEMPORAL__ADDRESS": dev_env.client.service_client.config.target_host,
        "MNEMOS_TEMPORAL__TASK_QUEUE": "nobody-polls-h197",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["form", str(path), "--no-wait"], env=env
    )
    assert result.exit_code == 0, result.stdout + result.stderr

    after = await store.get_agent("eve")
    recorded = await store.get_session("imported-1", "eve")
    await store.close()
    assert after == configured
    assert recorded is not None
