"""Record the ConsolidateScope history of a buffer merged in batches (the IN_BATCHES patch):
``python -m tests.histories.record_batches`` writes batches/consolidate_scope_batches.json, which
tests/workflows/test_replay.py replays.

Eight buffered reflections, batches of three, the fifth refused by the provider's filter: the
first batch is merged, the second split (its refused reflection set aside), then the last.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import refused_forbidden
from tests.harness import Harness
from tests.histories.recorder import save, time_skipping
from tests.workflows.test_consolidate_batches import ITEMS, grown_buffer


async def record() -> None:
    async with time_skipping() as env:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(
                env, Path(tmp), reflections=ReflectionSettings(threshold_user=99)
            )
            items = [*ITEMS[:4], "forbidden e", *ITEMS[5:]]
            await grown_buffer(h, batch=3, threshold=2, items=items)
            h.llm.defaults["consolidate"] = refused_forbidden
            handle = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
            async with h.worker():
                summary = await handle.result()
                history = await handle.fetch_history()
            assert (summary.absorbed, len(summary.set_aside)) == (7, 1), summary
        save(history, "batches/consolidate_scope_batches.json")


if __name__ == "__main__":
    asyncio.run(record())
