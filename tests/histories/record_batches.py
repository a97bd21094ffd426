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

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from memory.errors import InputRefusedError
from memory.llm.base import LLMRequest
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.settings import ReflectionSettings
from runtime.payloads import payload_data_converter
from runtime.starts import request_consolidation
from tests.fakes import echo_consolidation
from tests.harness import Harness
from tests.workflows.test_consolidate_batches import ITEMS, grown_buffer

HERE = Path(__file__).parent / "batches"


def _filtered(request: LLMRequest) -> ConsolidatedSections:
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    if any("forbidden" in r for r in p.reflections):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return echo_consolidation(request)


async def record() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(
                env, Path(tmp), reflections=ReflectionSettings(threshold_user=99)
            )
            items = [*ITEMS[:4], "forbidden e", *ITEMS[5:]]
            await grown_buffer(h, batch=3, threshold=2, items=items)
            h.llm.defaults["consolidate"] = _filtered
            handle = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
            async with h.worker():
                summary = await handle.result()
                history = await handle.fetch_history()
            assert (summary.absorbed, len(summary.set_aside)) == (7, 1), summary
        HERE.mkdir(exist_ok=True)
        (HERE / "consolidate_scope_batches.json").write_text(history.to_json())
        print(f"recorded batches/consolidate_scope_batches.json ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record())
