"""Step 5: one batched ADD / UPDATE / DELETE / NONE decision for the facts that have similar ones.

Existing facts are shown to the model by short indices, never by id, and every index it returns is
checked: a decision naming a fact that was not offered as that fact's candidate is rejected (the step is
retried), never guessed.

The step also embeds the texts its decisions store (ADD texts, UPDATE merges) through the
content-addressed cache: the commit only reads those vectors, so the store write never waits on the
remote embedder.
"""

from __future__ import annotations

from memory.deps import Deps
from memory.errors import InvalidModelOutputError
from memory.llm import choose_model
from memory.llm.base import LLMRequest
from memory.pipeline.embed_cache import embed_cached
from memory.pipeline.types import (
    CandidatesResult,
    Decision,
    DecisionsResult,
    LlmCall,
    NewFact,
    SimilarFact,
    Window,
)
from memory.pipeline.usage import llm_call
from memory.pipeline.window import window_agent
from memory.prompts.decide_facts import (
    DecideFactsInput,
    ExistingFactShown,
    FactDecision,
    FactDecisions,
    NewFactShown,
)


def stored_texts(facts: list[NewFact], decisions: list[Decision]) -> list[str]:
    """The texts the decisions store, each needing a vector: ADD/DELETE texts and UPDATE merges."""
    by_index = {f.index: f for f in facts}
    return [d.final_text or by_index[d.new_index].content for d in decisions if d.event != "NONE"]


def _existing_index(candidates: CandidatesResult) -> list[SimilarFact]:
    """Each existing fact once, in first-seen order: the indices the prompt shows."""
    seen: dict[str, SimilarFact] = {}
    for new_index in sorted(candidates.by_new_index):
        for cand in candidates.by_new_index[new_index]:
            seen.setdefault(cand.fact_id, cand)
    return list(seen.values())


async def decide(
    deps: Deps, window: Window, facts: list[NewFact], candidates: CandidatesResult
) -> DecisionsResult:
    """Decide, then embed the texts to store (one embedding call at most, none when cached)."""
    decisions, llm = await _decide(deps, window, facts, candidates)
    _, calls = await embed_cached(deps.store, deps.embedder, stored_texts(facts, decisions))
    return DecisionsResult(decisions=decisions, llm=llm, embedding_calls=calls)


async def _decide(
    deps: Deps, window: Window, facts: list[NewFact], candidates: CandidatesResult
) -> tuple[list[Decision], list[LlmCall]]:
    """ADD with no LLM call for facts without candidates; one call for all the others."""
    decisions = [
        Decision(new_index=f.index, event="ADD", final_text=f.content, reasoning="no similar fact")
        for f in facts
        if f.index not in candidates.by_new_index
    ]
    contested = [f for f in facts if f.index in candidates.by_new_index]
    if not contested:
        return decisions, []

    existing = _existing_index(candidates)
    position = {c.fact_id: i for i, c in enumerate(existing)}
    offered = {
        f.index: {position[c.fact_id] for c in candidates.by_new_index[f.index]} for f in contested
    }
    shown = [
        ExistingFactShown(
            index=i,
            content=c.content,
            candidate_for=tuple(sorted(n for n, idx in offered.items() if i in idx)),
        )
        for i, c in enumerate(existing)
    ]
    agent = await window_agent(deps, window)
    request = LLMRequest.of(
        DecideFactsInput(
            new_facts=[
                NewFactShown(index=f.index, content=f.content, scope=f.scope) for f in contested
            ],
            existing=shown,
            max_words=deps.settings.facts.max_words,
        ),
        model=choose_model(deps.settings, deps.llm.name, "fast", agent.tier),
        temperature=deps.settings.models.temperature,
    )
    result = await deps.llm.generate_structured(request, FactDecisions)
    decisions += resolve(result.value.decisions, contested, existing, offered)
    return sorted(decisions, key=lambda d: d.new_index), [llm_call(request, result.usage)]


def resolve(
    raw: list[FactDecision],
    contested: list[NewFact],
    existing: list[SimilarFact],
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
