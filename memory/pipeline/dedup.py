"""Step 5: one batched ADD / UPDATE / DELETE / NONE decision for the facts that have similar ones.

Existing facts are shown to the model by short indices, never by id, and every index it returns is
checked: a decision naming a fact that was not offered as that fact's candidate is rejected (the step is
retried), never guessed.
"""

from __future__ import annotations

from memory import prompts
from memory.deps import Deps
from memory.errors import InvalidModelOutputError
from memory.llm import choose_model
from memory.llm.base import LLMRequest
from memory.pipeline.types import (
    Candidate,
    CandidatesResult,
    Decision,
    DecisionsResult,
    NewFact,
    Window,
)
from memory.pipeline.usage import llm_call
from memory.schemas import FactDecision, FactDecisions


def _existing_index(candidates: CandidatesResult) -> list[Candidate]:
    """Each existing fact once, in first-seen order: the indices the prompt shows."""
    seen: dict[str, Candidate] = {}
    for new_index in sorted(candidates.by_new_index):
        for cand in candidates.by_new_index[new_index]:
            seen.setdefault(cand.fact_id, cand)
    return list(seen.values())


async def decide(
    deps: Deps, window: Window, facts: list[NewFact], candidates: CandidatesResult
) -> DecisionsResult:
    """ADD with no LLM call for facts without candidates; one call for all the others."""
    decisions = [
        Decision(new_index=f.index, event="ADD", final_text=f.content, reasoning="no similar fact")
        for f in facts
        if f.index not in candidates.by_new_index
    ]
    contested = [f for f in facts if f.index in candidates.by_new_index]
    if not contested:
        return DecisionsResult(decisions=decisions)

    existing = _existing_index(candidates)
    position = {c.fact_id: i for i, c in enumerate(existing)}
    offered = {
        f.index: {position[c.fact_id] for c in candidates.by_new_index[f.index]} for f in contested
    }
    shown = [
        (c.content, sorted(n for n, idx in offered.items() if position[c.fact_id] in idx))
        for c in existing
    ]
    agent = await deps.store.get_agent(window.agent_id)
    tier = agent.tier if agent else 0
    max_words = deps.settings.facts.max_words
    request = LLMRequest(
        task="decide_facts",
        model=choose_model(deps.settings, deps.llm.name, "fast", tier),
        system=prompts.DECIDE_SYSTEM,
        prompt=prompts.decide_prompt([(f.index, f.content) for f in contested], shown, max_words),
        payload={
            "new_facts": [
                {"index": f.index, "content": f.content, "scope": f.scope} for f in contested
            ],
            "existing": [{"index": i, "content": c.content} for i, c in enumerate(existing)],
            "candidates": [
                {"new_index": n, "existing_index": position[c.fact_id], "similarity": c.similarity}
                for n in sorted(candidates.by_new_index)
                for c in candidates.by_new_index[n]
            ],
        },
        temperature=deps.settings.models.temperature,
    )
    result = await deps.llm.generate_structured(request, FactDecisions)
    decisions += resolve(result.value.decisions, contested, existing, offered)
    return DecisionsResult(
        decisions=sorted(decisions, key=lambda d: d.new_index),
        llm=[llm_call(request, result.usage)],
    )


def resolve(
    raw: list[FactDecision],
    contested: list[NewFact],
    existing: list[Candidate],
    offered: dict[int, set[int]],
) -> list[Decision]:
    """Validate the model's decisions and map indices back to fact ids. Raises InvalidModelOutputError."""
    by_index = {f.index: f for f in contested}
    out: dict[int, Decision] = {}
    targeted: set[int] = set()
    for d in raw:
        fact = by_index.get(d.new_fact_index)
        if fact is None:
            raise InvalidModelOutputError(f"decision for unknown new fact index {d.new_fact_index}")
        if d.new_fact_index in out:
            raise InvalidModelOutputError(f"two decisions for new fact {d.new_fact_index}")
        text = " ".join((d.final_text or fact.content).split())
        if d.event == "ADD":
            out[fact.index] = Decision(
                new_index=fact.index, event="ADD", final_text=text, reasoning=d.reasoning
            )
            continue
        if d.existing_index is None or d.existing_index not in offered[fact.index]:
            raise InvalidModelOutputError(
                f"{d.event} for new fact {fact.index} names existing index {d.existing_index}, "
                f"which was not offered as its candidate"
            )
        if d.event in ("UPDATE", "DELETE"):
            if d.existing_index in targeted:
                raise InvalidModelOutputError(
                    f"existing fact {d.existing_index} changed by two decisions"
                )
            targeted.add(d.existing_index)
        target = existing[d.existing_index]
        out[fact.index] = Decision(
            new_index=fact.index,
            event=d.event,
            existing_id=target.fact_id,
            expected_version=target.version,
            final_text=None if d.event == "NONE" else text,
            reasoning=d.reasoning,
        )
    missing = sorted(set(by_index) - set(out))
    if missing:
        raise InvalidModelOutputError(f"no decision for new facts {missing}")
    return list(out.values())
