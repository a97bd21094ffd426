"""Record the EndSession history of an end whose formation drains for longer than its budget and
keeps moving (the PROGRESS_DEADLINE patch): ``python -m tests.histories.record_end_progress``
writes end_session/progress.json, which tests/workflows/test_replay.py replays.

The formation is the stand-in of tests/workflows/test_end_session_wait.py (a durable timer a
window, one and a half budgets long); the end looks at its progress at the budget and waits on.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from memory.settings import TemporalSettings
from tests.harness import Harness, conversation
from tests.histories.recorder import save, time_skipping
from tests.workflows.test_end_session_wait import RETRIES, LongDrain
from worker import build_worker
from workflows.consolidate_scope import ConsolidateScopeWorkflow
from workflows.end_session import EndSessionWorkflow


async def record() -> None:
    async with time_skipping() as env:
        with tempfile.TemporaryDirectory() as tmp:
            queue = TemporalSettings(
                task_queue=f"end-{uuid.uuid4().hex[:8]}", search_attributes=False
            )
            h = await Harness.create(env, Path(tmp), retries=RETRIES, temporal=queue)
            await h.record("s1", conversation(2))
            workflows = [LongDrain, EndSessionWorkflow, ConsolidateScopeWorkflow]
            async with build_worker(h.client, h.deps, h.settings, workflows=workflows):
                handle = await h.memory.end_session("eve", "s1")
                ended = await handle.result()
                history = await handle.fetch_history()
            assert ended.formation.messages_formed == 2, ended
        save(history, "end_session/progress.json")


if __name__ == "__main__":
    asyncio.run(record())
