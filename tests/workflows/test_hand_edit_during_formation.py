"""A person corrects a fact (the memory page, PATCH …/facts/{id}, `mnemos facts edit`) while a
formation of messages said before the correction is inside its extraction; that formation restates
the corrected-away text, and the decision step updates the fact back. The correction stands
(memory/store/rules/versions.py said_before: an edit keeps the said time of the version it
replaced, so the edit's own time is what the statement is compared with); the statement is kept
in the fact's history."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.llm.base import LLMRequest
from memory.llm.fact_decisions import decide_facts
from memory.prompts.decide_facts import DecideFactsInput, FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from memory.store.rules.versions import LEARNT_LATE
from tests.harness import FirstExtractionGate, Harness, conversation, facts

OLD = "Alice works at Acme Robotics in Lyon"
NEW = "Alice works at Initech Robotics in Lyon"


def _offline_decision(request: LLMRequest) -> FactDecisions:
    """The offline provider's decision step: it updates a fact restated in other words."""
    assert isinstance(request.task_input, DecideFactsInput)
    return decide_facts(request.task_input)


class _SaysTheOld(FirstExtractionGate):
    async def __call__(self, request: LLMRequest) -> ExtractedFacts:
        await super().__call__(request)
        return facts((OLD, "user"), sources=[1])


async def test_a_correction_is_not_undone_by_a_statement_said_before_it(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["decide_facts"] = _offline_decision
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(4, prefix="a"))
    await h.record("s1", conversation(4, prefix="b", start=4))  # after s0, before the edit
    h.llm.script("extract_facts", facts((OLD, "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        [fact] = await h.all_facts()
        gate = _SaysTheOld()
        h.llm.defaults["extract_facts"] = gate
        run = await h.start("s1")
        await gate.entered.wait()  # s1's formation is inside its extraction ...
        edited = await manager.edit_fact(fact.fact_id, NEW)  # ... when the person corrects it
        gate.release.set()
        summary = await run.result()

    said = max(m.created_at for m in conversation(4, prefix="b", start=4))
    assert fact.said_at is not None and fact.said_at < said < edited.updated_at
    assert summary.decisions == {"UPDATE": 1}
    [now] = await h.all_facts()
    assert now.content == NEW
    assert (now.history[-1].content, now.history[-1].reason) == (OLD, LEARNT_LATE)
    assert OLD not in await h.memory.memory_context("eve", "s1", user_id="alice")
