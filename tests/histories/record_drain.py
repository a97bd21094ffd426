"""Record the FormMemories histories of a drain that continues as new after every pass, with a
split that ends in a message passed over (the SPLIT_PASSED_OVER and DRAIN_TOTALS patches):
``python -m tests.histories.record_drain NAME`` writes drain/NAME_<n>.json, one per run, which
tests/workflows/test_replay.py replays. form_memories_drain_<n>: each run carried every LLM call
and degraded step of the runs before it; bounded_carry_<n>: the totals bounded (workflows/drain.py
carried: the LLM calls tallied per task and model, the newest degraded steps).

Twelve messages in windows of four, message 3 refused: the first window split, 1-2 formed, 3-4
split, 3 passed over, 4 formed alone (back to windows of four), 5-8 and 9-12; each run carries the
split in progress and what the drain did to the next (tests/workflows/test_drain_totals.py).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from pathlib import Path

from memory.errors import InputRefusedError
from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings, TemporalSettings
from tests.can_server import continuing_as_new
from tests.harness import Harness, conversation, facts
from workflows.naming import formation_workflow_id

HERE = Path(__file__).parent / "drain"


def _refuses_message_3(request: LLMRequest) -> ExtractedFacts:
    if "message 2 from" in str(request.task_input):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return facts(("Alice plans a trip", "user"))


async def record(name: str) -> None:
    async with continuing_as_new() as env:
        with tempfile.TemporaryDirectory() as tmp:
            temporal = TemporalSettings(
                address=env.client.service_client.config.target_host,
                task_queue=f"drain-{uuid.uuid4().hex[:8]}",
                search_attributes=False,
                workflow_sandbox=True,
            )
            formation = FormationSettings(min_messages=4, max_messages_per_run=4)
            h = await Harness.create(env, Path(tmp), temporal=temporal, formation=formation)
            h.llm.defaults["extract_facts"] = _refuses_message_3
            await h.record("s1", conversation(12))
            async with h.worker():
                summary = await h.form("s1")
            assert (summary.splits, summary.passed_over, summary.formations) == (2, 1, 5)
            workflow_id = formation_workflow_id("eve", "s1")
            runs = [r async for r in env.client.list_workflows(f"WorkflowId = '{workflow_id}'")]
            HERE.mkdir(exist_ok=True)
            for n, run in enumerate(sorted(runs, key=lambda r: r.start_time), 1):
                handle = env.client.get_workflow_handle(workflow_id, run_id=run.run_id)
                history = await handle.fetch_history()
                (HERE / f"{name}_{n}.json").write_text(history.to_json())
            print(f"recorded {len(runs)} runs in drain/")


if __name__ == "__main__":
    asyncio.run(record(sys.argv[1]))
