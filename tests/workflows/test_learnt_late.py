"""A conversation formed after a later one (backfilled, formed by the cold job, a backlog after an
outage) never undoes what was said after it, even in the words of a fact the later statement
retired (memory/store/rules/fact_ops.py): FormMemories end to end, the model scripted.

Alice said she lived in Berlin in January, and that she had moved to Paris ten days ago; a March
conversation, backfilled today with its own timestamps, says Berlin again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.models import FactFilter, MessageIn
from memory.prompts.decide_facts import FactDecision, FactDecisions
from tests.harness import Harness, facts

BERLIN, PARIS = "Alice lives in Berlin", "Alice lives in Paris"


def said(session: str, words: str, at: datetime) -> list[MessageIn]:
    return [
        MessageIn(
            message_id=f"{session}-{i}", role="user", user_id="alice", name="Alice",
            content=f"{words} ({i})", created_at=at + timedelta(seconds=i),
        )
        for i in range(4)
    ]  # fmt: skip


def decided(event: Literal["ADD", "DELETE"]) -> FactDecisions:
    """The model's answer about the new fact beside the first candidate (Berlin beside Paris)."""
    candidate = 0 if event != "ADD" else None
    return FactDecisions(
        decisions=[
            FactDecision(new_fact_index=0, event=event, existing_index=candidate, merged_text=None)
        ]
    )


@pytest.mark.parametrize("decision", ["DELETE", "ADD"])
async def test_a_backfilled_older_statement_does_not_undo_a_later_move(
    time_env: WorkflowEnvironment, tmp_path: Path, decision: Literal["DELETE", "ADD"]
) -> None:
    h = await Harness.create(time_env, tmp_path)
    now = datetime.now(UTC)
    march = now - timedelta(days=250)
    await h.record("jan", said("jan", "I live in Berlin", now - timedelta(days=300)))
    await h.record("nov", said("nov", "I moved to Paris", now - timedelta(days=10)))
    await h.record("mar", said("mar", "I live in Berlin", march))
    async with h.worker():
        h.llm.script("extract_facts", facts((BERLIN, "user"), sources=[1]))
        await h.form("jan")
        h.llm.script("extract_facts", facts((PARIS, "user"), sources=[1]))
        h.llm.script("decide_facts", decided("DELETE"))  # she moved
        await h.form("nov")
        h.llm.script("extract_facts", facts((BERLIN, "user"), sources=[1]))
        # The model takes Berlin for the newer (DELETE of Paris), or keeps both (ADD).
        h.llm.script("decide_facts", decided(decision))
        await h.form("mar")

    [paris] = await h.all_facts()
    assert paris.content == PARIS
    # What March said is kept, with its source and time, as replaced by the later move.
    flt = FactFilter(agent_id="eve", user_id="alice")
    every = await h.store.list_facts(flt, include_invalid=True)
    kept = [f for f in every if f.source_session_id == "mar"]
    assert [(f.content, f.said_at, f.invalidated_by) for f in kept] == [
        (BERLIN, march, paris.fact_id)
    ]
