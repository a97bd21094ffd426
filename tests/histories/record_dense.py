"""Record the FormMemories history of a message dense with facts (the DENSE_MESSAGES patch):
``python -m tests.histories.record_dense`` writes dense/form_memories_dense.json, which
tests/workflows/test_replay.py replays.

One message of 50 code words, within the budget: the model's answer fills its bound (40), so the
message is read again in halves; its 50 facts are committed in two passes, the second moving the
cursor past it.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from memory.llm.base import LLMRequest
from memory.models import MessageIn
from memory.prompts.common import MAX_ITEMS
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from runtime.payloads import payload_data_converter
from tests.fakes import transcript_of
from tests.harness import T0, Harness, facts, reflections
from workflows.naming import formation_workflow_id

HERE = Path(__file__).parent / "dense"


def _extract(request: LLMRequest) -> ExtractedFacts:
    shown = " ".join(m.content for m in transcript_of(request))
    words = re.findall(r"\bCODE\d+", shown)[:MAX_ITEMS]
    return facts(*[(f"Alice's code word is {w}", "user") for w in words], sources=[1])


def _add_all(request: LLMRequest) -> FactDecisions:
    new = getattr(request.task_input, "new_facts", [])
    return FactDecisions(
        decisions=[
            FactDecision(new_fact_index=f.index, event="ADD", existing_index=None, merged_text=None)
            for f in new
        ]
    )


async def record() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(env, Path(tmp))
            dense = " ".join(f"My code word is CODE{i:02d}." for i in range(1, 51))
            await h.record(
                "s1",
                [
                    MessageIn(
                        message_id="m0",
                        role="user",
                        user_id="alice",
                        content=dense,
                        created_at=T0 + timedelta(minutes=1),
                    )
                ],
            )
            h.llm.defaults["extract_facts"] = _extract
            h.llm.defaults["extract_reflections"] = reflections(session=["talks in code"])
            h.llm.defaults["decide_facts"] = _add_all
            async with h.worker():
                summary = await h.form("s1")
            assert (summary.halved, summary.passes, summary.facts_added) == (1, 1, 50), summary
            history = await h.client.get_workflow_handle(
                formation_workflow_id("eve", "s1")
            ).fetch_history()
        HERE.mkdir(exist_ok=True)
        (HERE / "form_memories_dense.json").write_text(history.to_json())
        print(f"recorded dense/form_memories_dense.json ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record())
