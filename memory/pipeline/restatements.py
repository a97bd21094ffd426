"""A second look at a decision that kept a restatement (issue #22: a repeat is NONE).

The batched decision asks a model to compare several facts at once; a small one answers ADD or
UPDATE for a fact stated again in other words ("Alice was born on March 3." beside "Alice's
birthday is on March 3."), yet says "the same fact" when asked only that, of one pair (measured,
docs/local_models.md). So where the model added or updated a fact and the rules see that it may
state a stored candidate again (memory/llm/fact_overlap.py ``may_restate``: the same numbers
and names, nothing denied, nothing added), that one pair is asked; a yes makes the decision NONE.

Failing towards the model's first answer: an answer that cannot be read keeps the decision as it
was (a restatement stored twice costs a line; a change dropped as a repeat would lose it).
"""

from __future__ import annotations

from memory.errors import InvalidModelOutputError, MalformedOutputError
from memory.llm.base import LLMProvider, LLMRequest
from memory.llm.fact_overlap import may_restate
from memory.pipeline.predecide import refused
from memory.pipeline.types import Decision, LlmCall, NewFact, SimilarFact
from memory.pipeline.usage import llm_call
from memory.prompts.same_fact import SameFact, SameFactInput

RESTATES = "restates"  # a decision's reasoning when the second look made it NONE


async def second_look(
    llm: LLMProvider,
    model: str,
    decisions: list[Decision],
    facts: list[NewFact],
    candidates: dict[int, list[SimilarFact]],
) -> tuple[list[Decision], list[LlmCall]]:
    """The decisions, each model ADD or UPDATE of a fact that a stored candidate may already
    state asked about once more; and the calls that took."""
    if llm.deterministic:
        # The offline rules answered NONE wherever they read a restatement, and asked again
        # they read it the same way (fact_decisions.same_fact is their NONE): no call to make.
        return decisions, []
    said = {f.index: f.content for f in facts}
    out: list[Decision] = []
    calls: list[LlmCall] = []
    for decision in decisions:
        stored = _maybe_restated(decision, said, candidates)
        if stored is None:
            out.append(decision)
            continue
        request = LLMRequest.of(
            SameFactInput(stored=stored.content, new=said[decision.new_index]),
            model=model,
            temperature=0.0,  # one yes/no: the likeliest answer, the same on every retry
        )
        try:
            result = await llm.generate_structured(request, SameFact)
        except (InvalidModelOutputError, MalformedOutputError):
            out.append(decision)
            continue
        calls.append(llm_call(request, result.usage))
        out.append(
            Decision(
                new_index=decision.new_index,
                event="NONE",
                existing_id=stored.fact_id,
                expected_version=stored.version,
                reasoning=f"{RESTATES} {stored.fact_id}",
            )
            if result.value.same
            else decision
        )
    return out, calls


def _maybe_restated(
    decision: Decision, said: dict[int, str], candidates: dict[int, list[SimilarFact]]
) -> SimilarFact | None:
    """The stored fact a model's ADD or UPDATE may have stated again, most similar first."""
    if decision.event not in ("ADD", "UPDATE") or (decision.reasoning and not refused(decision)):
        return None  # decided by rule or a fallback: not the model's to look at again
    # A refused UPDATE is an ADD now: a restatement shares a value, not the word a change needs.
    offered = candidates.get(decision.new_index, [])
    if decision.event == "UPDATE":
        offered = [c for c in offered if c.fact_id == decision.existing_id]
    text = said[decision.new_index]
    return next((c for c in offered if may_restate(text, c.content)), None)
