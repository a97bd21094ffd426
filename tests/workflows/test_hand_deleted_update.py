"""(h202 #5) A person deletes a fact on the memory page (DELETE …/facts/{id}, `mnemos facts delete`); a
conversation said BEFORE the delete, formed only now (a backlog, the cold job), states it again,
and the model, shown the one similar fact still valid, UPDATEs that one with it.

README (CLI table, `mnemos facts`): "a delete marks the fact deleted and keeps it (a formation of
messages said before the delete does not bring it back in any words the fact had (in either
scope), …)"; fact_ops: "the delete stands (never shown again)".

Here Alice's work email (kept) and an old personal email (deleted by hand: she asked the agent to
forget it) are both stored. The backlog's statement of the deleted email ADDed is dropped (the
commit's `_deleted_statement`), but as an UPDATE of the valid fact it is written: the deleted
email is back in the context and the kept one is overwritten. memory/store/rules/fact_ops.py
`_update` checks `deleted_since` only on its target, never the hand-deleted facts whose text the
update writes (as `_add` does with `self.deleted` / version_hashes)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.llm.base import LLMRequest
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from tests.harness import Harness, conversation, facts

pytestmark = pytest.mark.usefixtures("store_backend")

WORK = "Alice's email is alice@acme.example"
PRIVATE = "Alice's email is alice.private@mail.example"


def _add_then_update(request: LLMRequest) -> FactDecisions:
    """s1: ADD (another address); s2: UPDATE of the one shown (its email changed)."""
    assert isinstance(request.task_input, DecideFactsInput)
    shown = request.task_input.existing
    event = "UPDATE" if len(shown) == 1 and shown[0].content == WORK and _calls[0] else "ADD"
    _calls[0] += 1
    return FactDecisions(
        decisions=[
            FactDecision(
                new_fact_index=f.index,
                event=event,
                existing_index=0 if event == "UPDATE" else None,
                merged_text=None,
            )
            for f in request.task_input.new_facts
        ]
    )


_calls = [0]


async def test_a_hand_deleted_fact_is_not_written_back_as_an_update_of_another(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["decide_facts"] = _add_then_update
    _calls[0] = 0
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(4, prefix="a", start=0))
    await h.record("s1", conversation(4, prefix="b", start=10))
    await h.record("s2", conversation(4, prefix="c", start=20))  # said before the delete below
    h.llm.script("extract_facts", facts((WORK, "user"), sources=[1]))
    h.llm.script("extract_facts", facts((PRIVATE, "user"), sources=[1]))
    h.llm.script("extract_facts", facts((PRIVATE, "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        await h.form("s1")
        [private] = [f for f in await h.all_facts() if f.content == PRIVATE]
        await manager.delete_fact(private.fact_id, reason="Alice asked to forget it")
        summary = await h.form("s2")  # the backlog, said before the delete

    assert summary.decisions == {"UPDATE": 1}, summary.decisions
    now = sorted(f.content for f in await h.all_facts())
    context = await h.memory.memory_context("eve", "s2", user_id="alice")
    assert "alice.private" not in context, now
    assert now == [WORK], now
