"""Record a ColdSessions history that finishes ended sessions (tests/workflows/test_replay.py
replays it): ``python -m tests.histories.record_cold NAME`` writes cold_sessions/NAME.json.

Three sessions ended an hour ago whose ends never ran, one page each (page size 1), so the run
shows how the job walks the ended sessions: one page per run before FINISH_ENDED_PAGES, every
page after it. Recorded on the dev server, as the job starts other workflows (their EndSession).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from runtime.payloads import payload_data_converter
from tests.harness import T0, Harness, conversation, facts, reflections
from workflows.cold_sessions import ColdSessionsInput, ColdSessionsResult
from workflows.naming import COLD_SESSIONS_WORKFLOW

HERE = Path(__file__).parent / "cold_sessions"


async def record(name: str) -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        data_converter=payload_data_converter,
        dev_server_extra_args=["--ui-disable-news-fetch"],
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(env, Path(tmp))
            h.llm.defaults["extract_facts"] = facts(("Alice drinks green tea", "user"))
            h.llm.defaults["extract_reflections"] = reflections(session=["a trip is planned"])
            for s in ("ended-a", "ended-b", "ended-c"):
                await h.record(s, conversation(2, prefix=f"{s}-"))
                await h.store.end_session(s, "eve", T0 + timedelta(hours=1))
            inp = ColdSessionsInput.from_settings(h.settings)
            inp = inp.model_copy(
                update={"sessions": inp.sessions.model_copy(update={"cold_page_size": 1})}
            )
            async with h.worker():
                handle = await env.client.start_workflow(
                    COLD_SESSIONS_WORKFLOW,
                    inp,
                    id=f"cold-{name}-{uuid.uuid4().hex[:6]}",
                    task_queue=h.settings.temporal.task_queue,
                    result_type=ColdSessionsResult,
                )
                result = await asyncio.wait_for(handle.result(), 60)
                history = await handle.fetch_history()
        print(f"{name}: {result.summary()}")
        (HERE / f"{name}.json").write_text(history.to_json())
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1]))
