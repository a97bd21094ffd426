"""A person deletes a fact (DELETE …/facts/{id}, `mnemos facts delete`, the memory page: "The fact
is kept, marked deleted, and never shown to the agent again") while a formation of messages said
before the delete is inside its extraction; that formation restates the fact. What was said
before the delete does not bring it back (memory/store/rules/versions.py deleted_since): the ADD
is counted a duplicate, and the agent is not shown the fact."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from tests.harness import FirstExtractionGate, Harness, conversation, facts

SECRET = "Alice's home address is 12 Rue de Rivoli"


class _SaysTheAddress(FirstExtractionGate):
    """Every extraction finds the address; the first held until released."""

    async def __call__(self, request: LLMRequest) -> ExtractedFacts:
        await super().__call__(request)
        return facts((SECRET, "user"), sources=[1])


async def test_a_statement_said_before_a_hand_delete_does_not_bring_the_fact_back(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(4, prefix="a"))
    await h.record("s1", conversation(4, prefix="b"))  # said in the same hour as s0
    h.llm.script("extract_facts", facts((SECRET, "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        [fact] = [f for f in await h.all_facts() if f.content == SECRET]

        gate = _SaysTheAddress()
        h.llm.defaults["extract_facts"] = gate
        run = await h.start("s1")
        await gate.entered.wait()  # s1's formation is inside its extraction ...
        # ... when Alice asks for her address to be deleted.
        deleted = await manager.delete_fact(fact.fact_id, reason="user asked to delete it")
        gate.release.set()
        summary = await run.result()

    said = max(m.created_at for m in conversation(4, prefix="b"))
    assert deleted.invalidated_at is not None and said < deleted.invalidated_at
    assert (summary.facts_added, summary.facts_duplicate) == (0, 1)
    assert [f for f in await h.all_facts() if f.content == SECRET] == []
    assert await h.store.get_facts([fact.fact_id]) == [deleted]
    assert "Rue de Rivoli" not in await h.memory.memory_context("eve", "s1", user_id="alice")
