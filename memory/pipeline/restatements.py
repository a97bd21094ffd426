"""A second look at a decision that kept a restatement (issue #22: a repeat is NONE).

The batched decision asks a model to compare several facts at once; a small one answers ADD or
UPDATE for a fact stated again in other words ("Alice was born on March 3." beside "Alice's
birthday is on March 3."), yet says "the same fact" when asked only that, of one pair (measured,
docs/local_models.md). So where the model added or updated a fact and the rules see that it may
state a stored candidate again (memory/llm/fact_overlap.py ``may_restate``: the same numbers
and names, nothing denied, nothing added), that one pair is asked; a yes makes the decision NONE.

Failing towards the model's first answer: an answer that cannot be read, or a refused question,
keeps the decision as it was (a restatement stored twice costs a line; a change dropped as a
repeat would lose it), and a provider failing on one ends the second looks, every decision kept:
as the extraction's second looks do (memory/pipeline/facts.py ``_read_again``). Raised, the
failure would fail the decision step, and its retry pay for the decision again, or its
fallback add every new fact unmerged.
"""

from __future__ import annotations

from typing import NamedTuple

import structlog

from memory.errors import (
    InputRefusedError,
    InvalidModelOutputError,
    MalformedOutputError,
    ProviderError,
)
from memory.llm.base import LLMProvider, LLMRequest
from memory.llm.fact_overlap import may_restate
from memory.pipeline.predecide import refused
from memory.pipeline.types import Decision, LlmCall, NewFact, SimilarFact
from memory.pipeline.usage import llm_call
from memory.prompts.same_fact import SameFact, SameFactInput

RESTATES = "restates"  # a decision's reasoning when the second look made it NONE

log = structlog.get_logger(__name__)


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
    ended = False  # a provider failed: the decisions left are kept as the model made them
    for decision in decisions:
        stored = None if ended else _maybe_restated(decision, said, candidates)
        if stored is None:
            out.append(decision)
            continue
        same, call, ended = await ask_same_fact(
            llm, model, stored.content, said[decision.new_index]
        )
        calls += [call] if call is not None else []
        out.append(
            Decision(
                new_index=decision.new_index,
                event="NONE",
                existing_id=stored.fact_id,
                expected_version=stored.version,
                reasoning=f"{RESTATES} {stored.fact_id}",
            )
            if same
            else decision
        )
    return out, calls


class SameFactAnswer(NamedTuple):
    same: bool  # False when not answered: the decision stands
    call: LlmCall | None  # the call paid for, if answered
    ended: bool  # the provider failed: the pairs left would fail the same way, not asked


async def ask_same_fact(llm: LLMProvider, model: str, stored: str, new: str) -> SameFactAnswer:
    """The model's yes or no to one pair: whether ``new`` states ``stored`` again. Failing
    towards the decision made: an unusable or refused answer is a no for this pair (the next may
    be asked); a provider failure (unreachable, rate limited, unauthorised) a no that ends the
    asking, since a retry of the step would pay for the decision again."""
    request = LLMRequest.of(
        SameFactInput(stored=stored, new=new),
        model=model,
        temperature=0.0,  # one yes/no: the likeliest answer, the same on every retry
    )
    try:
        result = await llm.generate_structured(request, SameFact)
    except (InvalidModelOutputError, MalformedOutputError, InputRefusedError) as err:
        _log_kept(err, ended=False)
        return SameFactAnswer(same=False, call=None, ended=False)
    except ProviderError as err:
        _log_kept(err, ended=True)
        return SameFactAnswer(same=False, call=None, ended=True)
    return SameFactAnswer(same=result.value.same, call=llm_call(request, result.usage), ended=False)


def _log_kept(err: Exception, *, ended: bool) -> None:
    """Say why a second look kept the decision made: the error's type, provider and status,
    never its message (a refusal may quote what the user said)."""
    log.warning(
        "same_fact_failed_decision_kept",
        error=type(err).__name__,
        provider=getattr(err, "provider", ""),
        status=getattr(err, "status", None),
        second_looks_ended=ended,
    )


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
