"""A restatement is NONE (issue #22): after the batched decision kept a fact that may state a
stored one again, that one pair is asked once more, and a yes makes the decision NONE. The pair is
asked only where the rules allow a restatement; an unreadable or refused answer keeps the first
decision, and a provider failing on one ends the second looks with every decision kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs
from temporalio.testing import WorkflowEnvironment

from memory.deps import Deps
from memory.errors import InputRefusedError, MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.pipeline import dedup, restatements
from memory.pipeline.types import CandidatesResult, Decision, NewFact, SimilarFact
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.same_fact import SameFact, SameFactInput
from memory.settings import FactSettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder, permanent, transient
from tests.harness import Harness, conversation, facts
from tests.realmodel.identifier_cases import AGENT, window

LIBRARY = SimilarFact(
    fact_id="f-library", content="Alice works at the city library.", version=1, similarity=0.6
)
BIRTHDAY = SimilarFact(
    fact_id="f-birthday", content="Alice's birthday is on March 3.", version=2, similarity=0.8
)
looped = MalformedOutputError("the answer repeated itself")
FLIGHT = SimilarFact(
    fact_id="f-flight", content="Alice's flight is on March 3.", version=1, similarity=0.9
)


@pytest.fixture
async def deps(tmp_path: Path) -> Deps:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AGENT)
    return Deps(settings=Settings(), store=store, llm=ScriptedLLM(), embedder=WordHashEmbedder())


async def _decide(
    deps: Deps,
    said: str,
    stored: list[SimilarFact],
    event: str,
    target: int | None,
    same: dict[str, bool] | Exception,
) -> tuple[str, str | None, str]:
    llm = deps.llm
    assert isinstance(llm, ScriptedLLM)
    answer = {"new_fact_index": 0, "event": event, "existing_index": target, "merged_text": None}
    llm.script("decide_facts", {"decisions": [answer]})
    llm.script("same_fact", same)
    new = [NewFact(index=0, content=said, scope="user")]
    decided = await dedup.decide(deps, window(), new, CandidatesResult(by_new_index={0: stored}))
    [d] = decided.decisions
    # Every call answered is counted in the formation's usage, the second look's too.
    answered = [
        r.task for r in llm.requests if r.task == "decide_facts" or not isinstance(same, Exception)
    ]
    assert [c.task for c in decided.llm] == answered
    return d.event, d.existing_id, d.reasoning


def _asked(deps: Deps) -> list[tuple[str, str]]:
    assert isinstance(deps.llm, ScriptedLLM)
    pairs = [r.task_input for r in deps.llm.calls("same_fact")]
    return [(p.stored, p.new) for p in pairs if isinstance(p, SameFactInput)]


async def test_a_restatement_the_model_added_is_none_when_it_says_the_same(deps: Deps) -> None:
    said = "Alice was born on March 3."
    got = await _decide(deps, said, [LIBRARY, BIRTHDAY], "ADD", None, {"same": True})
    assert got == ("NONE", "f-birthday", "restates f-birthday")
    assert _asked(deps) == [(BIRTHDAY.content, said)]  # the pair that may restate, not the other


async def test_a_restatement_the_model_updated_is_none_when_it_says_the_same(deps: Deps) -> None:
    got = await _decide(deps, "Alice was born on March 3.", [BIRTHDAY], "UPDATE", 0, {"same": True})
    assert got == ("NONE", "f-birthday", "restates f-birthday")


async def test_a_no_keeps_the_first_decision(deps: Deps) -> None:
    got = await _decide(
        deps, "Alice was born on March 3.", [BIRTHDAY], "ADD", None, {"same": False}
    )
    assert got == ("ADD", None, "")


async def test_an_unreadable_answer_keeps_the_first_decision(deps: Deps) -> None:
    got = await _decide(deps, "Alice was born on March 3.", [BIRTHDAY], "ADD", None, looped)
    assert got == ("ADD", None, "")


@pytest.mark.parametrize(
    ("said", "event", "target"),
    [
        ("Alice's flight was cancelled on March 3.", "UPDATE", 0),  # adds "cancelled"
        ("Alice's flight is on March 4.", "UPDATE", 0),  # another date
        ("Alice no longer has a flight on March 3.", "DELETE", 0),  # not kept: retired
    ],
)
async def test_a_change_is_never_asked_about(
    deps: Deps, said: str, event: str, target: int
) -> None:
    got = await _decide(deps, said, [FLIGHT], event, target, {"same": True})
    assert got[:2] == (event, "f-flight") and _asked(deps) == []


async def test_the_offline_provider_answers_by_its_rules() -> None:
    async def same(stored: str, new: str) -> bool:
        request = LLMRequest.of(SameFactInput(stored=stored, new=new), model="heuristic-rules-v1")
        return (await HeuristicProvider().generate_structured(request, SameFact)).value.same

    assert await same("Alice likes pizza.", "alice likes pizza")
    assert not await same("Alice lives in Paris", "Alice lives in Berlin")


async def test_the_offline_rules_are_not_asked_twice(deps: Deps) -> None:
    """Their decision already says NONE wherever they read a restatement."""
    offline = Deps(
        settings=deps.settings, store=deps.store, llm=HeuristicProvider(), embedder=deps.embedder
    )
    new = [NewFact(index=0, content="Alice was born on March 3.", scope="user")]
    candidates = CandidatesResult(by_new_index={0: [BIRTHDAY]})
    decided = await dedup.decide(offline, window(), new, candidates)
    assert [d.event for d in decided.decisions] == ["ADD"]
    assert [c.task for c in decided.llm] == ["decide_facts"]


refused = InputRefusedError("gemini refused: block_reason=SAFETY", provider="gemini")


@pytest.mark.parametrize(
    "failure",
    [refused, transient(), permanent()],
    ids=["refused", "rate-limited", "rejected"],
)
async def test_a_failed_restatement_question_keeps_the_first_decision(
    deps: Deps, failure: Exception
) -> None:
    """Refused, or the provider failing: the model's UPDATE stands, the decision step does not
    fail (its retry would pay for the decision again, its fallback add the fact unmerged)."""
    said = "Alice's birthday is March 3."  # may restate it; an UPDATE the rules let stand
    with capture_logs() as logs:
        got = await _decide(deps, said, [BIRTHDAY], "UPDATE", 0, failure)
    assert got == ("UPDATE", "f-birthday", "")
    [line] = [e for e in logs if e["event"] == "same_fact_failed_decision_kept"]
    assert line["error"] == type(failure).__name__
    assert "March" not in repr(line)  # said why, not what was said


async def test_a_provider_failing_on_a_second_look_ends_them() -> None:
    """The next pair would fail the same way: not asked, its decision kept too."""
    llm = ScriptedLLM()
    llm.script("same_fact", transient(), {"same": True})
    new = [
        NewFact(index=0, content="Alice was born on March 3.", scope="user"),
        NewFact(index=1, content="Alice's flight is on March 3.", scope="user"),
    ]
    first = [Decision(new_index=0, event="ADD"), Decision(new_index=1, event="ADD")]
    looked, calls = await restatements.second_look(
        llm, "m", first, new, {0: [BIRTHDAY], 1: [FLIGHT]}
    )
    assert looked == first and calls == []
    assert len(llm.calls("same_fact")) == 1


async def test_through_formation_a_refused_second_look_keeps_the_update(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A birthday said again in other words, the model's UPDATE, the restatement question
    refused: the stored fact is updated, once, and the run is not degraded."""
    h = await Harness.create(time_env, tmp_path, facts=FactSettings(dedup_similarity_threshold=0.5))
    await h.record("s0", conversation(2, prefix="a"))
    await h.record("s1", conversation(2))
    update = FactDecision(new_fact_index=0, event="UPDATE", existing_index=0, merged_text=None)
    async with h.worker():
        h.llm.defaults["extract_facts"] = facts(("Alice's birthday is on March 3", "user"))
        await h.form("s0")
        h.llm.defaults["extract_facts"] = facts(("Alice's birthday is March 3", "user"))
        h.llm.defaults["decide_facts"] = FactDecisions(decisions=[update])
        h.llm.defaults["same_fact"] = refused
        summary = await h.form("s1")
    assert [r.task for r in h.llm.calls("same_fact")] == ["same_fact"]  # it was asked
    assert not summary.degraded, summary.degraded
    assert (summary.facts_updated, summary.facts_added) == (1, 0)
    assert [f.content for f in await h.all_facts()] == ["Alice's birthday is March 3"]
