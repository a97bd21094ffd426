"""Turning provider usage into the per-call records a formation run reports."""

from __future__ import annotations

from memory.llm.base import LLMRequest, Usage
from memory.pipeline.types import LlmCall


def llm_call(request: LLMRequest, usage: Usage) -> LlmCall:
    return LlmCall(
        task=request.task,
        provider=usage.provider,
        model=usage.model,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
    )


def words(text: str) -> int:
    return len(text.split())
