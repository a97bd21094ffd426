"""Record the FormMemories history of a message longer than the formation budget, read in slices
(the SLICED_MESSAGES patch): ``python -m tests.histories.record_sliced`` writes
sliced/form_memories_sliced.json, which tests/workflows/test_replay.py replays.

One short message, then one of three slices whose second no retry can extract (passed over, the
others formed), in one run: the drain's first window the short one, its second the long one.
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
from memory.settings import FormationSettings
from runtime.payloads import payload_data_converter
from tests.fakes import transcript_of
from tests.harness import T0, Harness, add_all, facts, reflections
from workflows.naming import formation_workflow_id

HERE = Path(__file__).parent / "sliced"
BUDGET_TOKENS = 100  # 400 characters
FILLER = "We talked about the weather and the garden. "


def _extract(request: LLMRequest) -> ExtractedFacts:
    shown = " ".join(m.content for m in transcript_of(request))
    if "unreadable" in shown:
        raise MalformedOutputError("output does not fit the schema")
    return facts(*[(f"Alice said {w}", "user") for w in shown.split() if w.startswith("CODE")])


def _said(i: int, content: str) -> MessageIn:
    return MessageIn(
        message_id=f"m{i}",
        role="user",
        user_id="alice",
        content=content,
        created_at=T0 + timedelta(minutes=i),
    )


async def record() -> None:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            h = await Harness.create(
                env, Path(tmp), formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
            )
            half = FILLER * 4  # 176 characters: each code word in the middle of its slice
            long = "".join(f"{half}{c} {half}" for c in ("CODEA", "CODEB unreadable", "CODEC"))
            await h.record("s1", [_said(0, "My name is Alice, I like CODEZ."), _said(1, long)])
            h.llm.defaults["extract_facts"] = _extract
            h.llm.defaults["extract_reflections"] = reflections(session=["talks in code"])
            h.llm.defaults["decide_facts"] = add_all
            async with h.worker():
                summary = await h.form("s1")
            assert (summary.slices_read, summary.passed_over) == (3, 1), summary
            history = await h.client.get_workflow_handle(
                formation_workflow_id("eve", "s1")
            ).fetch_history()
        HERE.mkdir(exist_ok=True)
        (HERE / "form_memories_sliced.json").write_text(history.to_json())
        print(f"recorded sliced/form_memories_sliced.json ({len(history.events)} events)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record())
