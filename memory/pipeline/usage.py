"""Turning provider usage into the per-call records a formation run reports, and carrying those
records through Temporal's details, where a step's failed attempts leave what they paid for.

A failed attempt of an LLM step may have paid for answers (one rejected, or the first of a few
calls before another failed): the next attempt finds them in its heartbeat details, and the
step's final error carries them to the workflow, which adds them to the run's summary. The format
is written once, here, where both sides import it (the workflows never import the activities'
encoding): a list of ``[task, provider, model, input_tokens, output_tokens]``, plain JSON values
that any worker's payload converter reads. At a position of its own in each, after what older
code reads there (activities/paid.py), so an older reader never meets it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory.llm.base import LLMRequest, Usage
from memory.pipeline.types import LlmCall
from memory.word_count import words as words  # the pipeline's and management's word count

# Heartbeat details of an LLM step: [why the last answer was rejected, how many were, the usage].
HEARTBEAT_USAGE = 2
# An LLM step's error details: [what the step says of itself (extract_facts: whether its piece can
# be halved; None when nothing), the usage].
ERROR_USAGE = 1

type Encoded = list[list[str | int]]


def llm_call(request: LLMRequest, usage: Usage) -> LlmCall:
    return LlmCall(
        task=request.task,
        provider=usage.provider,
        model=usage.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
    )


def encoded(calls: Sequence[LlmCall]) -> Encoded:
    return [[c.task, c.provider, c.model, c.input_tokens, c.output_tokens] for c in calls]


def decoded(value: Any) -> list[LlmCall]:
    """The calls ``encoded`` wrote; whatever else is there (nothing, or another build's value)
    decodes to none of them: what a step paid for is reported, never a reason to fail a run."""
    if not isinstance(value, list):
        return []
    calls: list[LlmCall] = []
    for item in value:
        match item:
            case [str(task), str(provider), str(model), int(tokens_in), int(tokens_out)]:
                calls.append(
                    LlmCall(
                        task=task,
                        provider=provider,
                        model=model,
                        input_tokens=tokens_in,
                        output_tokens=tokens_out,
                    )
                )
            case _:
                pass
    return calls


def carried(details: Sequence[Any], at: int) -> list[LlmCall]:
    """The usage at position ``at`` of heartbeat or error ``details`` (none when absent)."""
    return decoded(details[at]) if len(details) > at else []
