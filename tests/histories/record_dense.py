"""Record the FormMemories history of a dense message read in pieces (the DENSE_MESSAGES patch):
``python -m tests.histories.record_dense`` writes dense/form_memories_dense.json, which
tests/workflows/test_replay.py replays.

One message of eight code words: the model fills its bound for the whole message, read by
extract_facts as any window is (so it is read in halves, extract_piece_facts), answers one half,
and no retry extracts the other (halved again: one quarter formed, the other, too short to halve,
passed over); every piece's facts in the window's one commit.
"""

from __future__ import annotations

import asyncio
import tempfile
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.models import MessageIn
from memory.prompts.extract_facts import ExtractedFacts
from runtime.payloads import payload_data_converter
from tests.fakes import transcript_of
from tests.harness import T0, Harness, add_all, facts, reflections
from workflows.naming import formation_workflow_id

HERE = Path(__file__).parent / "dense"
FILLER = "We talked about the weather and the garden for a while. "


def _extract(request: LLMRequest) -> ExtractedFacts:
    shown = " ".join(m.content for m in transcript_of(request))
    if len(shown) > 1500:  # the whole message: a full answer (its facts are read in halves)
        return facts(*[(f"Alice mentioned topic {i}", "user") for i in range(40)])
    if "unreadable" in shown:
        raise MalformedOutputError("output does not fit the schema")
    return facts(*[(f"Alice said {w}", "user") for w in shown.split() if w.startswith("CODE")])


async def record() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(env, Path(tmp))
            codes = [f"CODE{c}" for c in "ABCDEFG"] + ["CODEH unreadable"]
            dense = " ".join(f"{FILLER * 4}{code}." for code in codes)
            said = MessageIn(
                message_id="m0",
                role="user",
                user_id="alice",
                content=dense,
                created_at=T0 + timedelta(minutes=1),
            )
            await h.record("s1", [said])
            h.llm.defaults["extract_facts"] = _extract
            h.llm.defaults["extract_reflections"] = reflections(session=["talks in code"])
            h.llm.defaults["decide_facts"] = add_all
            async with h.worker():
                summary = await h.form("s1")
            assert summary.passed_over == 1 and summary.facts_added == 6, summary
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
