"""A person deletes a fact (DELETE …/facts/{id}, `mnemos facts delete`, the memory page: "The fact
is kept, marked deleted, and never shown to the agent again") while a formation of messages said
before the delete is inside its extraction; that formation restates the fact. What was said
before the delete does not bring it back (memory/store/rules/versions.py deleted_since), in the
fact's current words or in the words it had before a person corrected it: the ADD is counted a
duplicate, and the agent is not shown the fact. A distinct fact merely as similar as a dedup
candidate is added; one in other words is not when the model, asked that pair, calls it the same
fact (memory/pipeline/deleted_again.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.errors import InputRefusedError
from memory.llm.base import LLMRequest
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.same_fact import SameFact, SameFactInput
from memory.settings import FactSettings
from tests.harness import FirstExtractionGate, Harness, conversation, facts

SECRET = "Alice's home address is 12 Rue de Rivoli"


@dataclass
class _SaysTheAddress(FirstExtractionGate):
    """Every extraction finds the address (in ``words``); the first held until released."""

    words: str = SECRET
    also: str | None = None  # a second statement of it, later in the window

    async def __call__(self, request: LLMRequest) -> ExtractedFacts:
        await super().__call__(request)
        said = [(self.words, "user"), *([(self.also, "user")] if self.also else [])]
        return facts(*said, sources=[1])


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


async def _deleted_during_a_late_formation(
    h: Harness, words: str, *, edit: str | None = None, also: str | None = None
) -> tuple[int, int]:
    """s0 forms the address; s1 (said in the same hour) is held in its extraction, which finds
    the address in ``words``, while a person corrects the fact to ``edit`` (if any), then deletes
    it. (facts added, duplicates) of s1's formation."""
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(4, prefix="a"))
    await h.record("s1", conversation(4, prefix="b"))
    h.llm.script("extract_facts", facts((SECRET, "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        [fact] = [f for f in await h.all_facts() if f.content == SECRET]
        gate = _SaysTheAddress(words=words, also=also)
        h.llm.defaults["extract_facts"] = gate
        run = await h.start("s1")
        await gate.entered.wait()
        if edit is not None:
            await manager.edit_fact(fact.fact_id, edit)
        await manager.delete_fact(fact.fact_id, reason="user asked to delete it")
        gate.release.set()
        summary = await run.result()
    return summary.facts_added, summary.facts_duplicate


async def test_a_fact_corrected_then_deleted_is_not_brought_back_in_its_formed_words(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The person corrects the address on the page, then deletes it: the late formation restates
    the text first formed, which is no longer the fact's current one."""
    h = await Harness.create(time_env, tmp_path)
    counts = await _deleted_during_a_late_formation(h, SECRET, edit=f"{SECRET}, Paris")

    assert counts == (0, 1)
    assert [f.content for f in await h.all_facts() if "Rivoli" in f.content] == []
    assert "Rue de Rivoli" not in await h.memory.memory_context("eve", "s1", user_id="alice")


async def test_a_distinct_fact_said_before_a_similar_one_was_deleted_is_added(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The late formation finds Alice's work address, a distinct fact as similar to the deleted
    home address as a dedup candidate may be (the test embedder scores these two 0.89; the gate
    is set at 0.5, as a calibrated MiniLM's 0.45): it is added, the home address stays deleted."""
    work = "Alice's work address is 12 Rue de Rivoli"
    h = await Harness.create(time_env, tmp_path, facts=FactSettings(dedup_similarity_threshold=0.5))
    counts = await _deleted_during_a_late_formation(h, work)

    assert counts == (1, 0)
    assert [f.content for f in await h.all_facts() if f.invalidated_at is None] == [work]


REWORDED = "Alice lives at 12 Rue de Rivoli"


async def test_a_statement_in_other_words_said_before_the_delete_does_not_bring_it_back(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The late formation finds the deleted address in other words: the rules see that it may
    state the deleted fact again, the model asked that pair says it does, and nothing is stored
    (the commit alone compares texts, and would have added it)."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["same_fact"] = SameFact(same=True)
    counts = await _deleted_during_a_late_formation(h, REWORDED)

    [asked] = h.llm.calls("same_fact")
    assert asked.task_input == SameFactInput(stored=SECRET, new=REWORDED)
    assert counts == (0, 0)
    assert [f.content for f in await h.all_facts() if f.invalidated_at is None] == []
    assert "Rivoli" not in await h.memory.memory_context("eve", "s1", user_id="alice")


@pytest.mark.parametrize(
    "answer", [SameFact(same=False), InputRefusedError("refused", provider="scripted")]
)
async def test_a_statement_in_other_words_the_model_does_not_call_the_same_is_added(
    time_env: WorkflowEnvironment, tmp_path: Path, answer: SameFact | Exception
) -> None:
    """Asked, the model says it is another fact, or refuses the question: what was said is kept
    (a failure never drops it; the person can delete it again)."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["same_fact"] = answer
    counts = await _deleted_during_a_late_formation(h, REWORDED)

    assert len(h.llm.calls("same_fact")) == 1
    assert counts == (1, 0)
    assert [f.content for f in await h.all_facts() if f.invalidated_at is None] == [REWORDED]


def _repeat_of_the_earlier(request: LLMRequest) -> FactDecisions:
    """The model: each new fact asked about repeats (NONE) its first candidate, the window's
    earlier statement of the address."""
    p = request.task_input
    assert isinstance(p, DecideFactsInput)
    return FactDecisions(
        decisions=[
            FactDecision(
                new_fact_index=new.index,
                event="NONE",
                existing_index=next(e.index for e in p.existing if new.index in e.candidate_for),
                merged_text=None,
            )
            for new in p.new_facts
        ]
    )


async def test_a_repeat_in_the_window_of_a_dropped_restatement_does_not_bring_it_back(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The window states the deleted address twice, the second a repeat of the first: the first
    dropped, the second was made an ADD (it named an add not kept) and stored (review H177)."""
    h = await Harness.create(time_env, tmp_path, facts=FactSettings(dedup_similarity_threshold=0.1))
    h.llm.defaults["same_fact"] = SameFact(same=True)
    h.llm.defaults["decide_facts"] = _repeat_of_the_earlier
    await _deleted_during_a_late_formation(h, REWORDED, also="Alice's home is at 12 Rue de Rivoli")

    assert [f.content for f in await h.all_facts() if f.invalidated_at is None] == []
    assert "Rivoli" not in await h.memory.memory_context("eve", "s1", user_id="alice")


DEADLINE = "The vendor contract deadline is January 10, 2027"


async def test_a_deleted_agent_fact_said_again_as_the_users_stays_deleted(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A model files one fact under "agent" in one session and "user" in the next (the real 1.5B
    model did so with the Mars Festival facts): deleted as the agent's, it does not come back as
    alice's, in the very same words (review H177)."""
    h = await Harness.create(time_env, tmp_path)
    manager = MemoryManager(h.store, h.embedder, h.settings)
    await h.record("s0", conversation(4, prefix="a"))
    await h.record("s1", conversation(4, prefix="b"))
    h.llm.script("extract_facts", facts((DEADLINE, "agent"), sources=[1]))
    async with h.worker():
        await h.form("s0")
        [fact] = [f for f in await h.all_facts() if f.content == DEADLINE]
        gate = _SaysTheAddress(words=DEADLINE)  # as alice's
        h.llm.defaults["extract_facts"] = gate
        run = await h.start("s1")
        await gate.entered.wait()
        await manager.delete_fact(fact.fact_id, reason="wrong, never show it")
        gate.release.set()
        await run.result()

    assert fact.scope == "agent" and h.llm.calls("same_fact") == []  # its words: no question
    assert [f for f in await h.all_facts() if f.invalidated_at is None] == []
    assert "January 10" not in await h.memory.memory_context("eve", "s1", user_id="alice")
