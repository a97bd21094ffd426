"""One interface for every LLM provider: structured output, a pydantic model. Every task answers
bounded JSON (even consolidation, whose blob mnemos writes from the model's items), so a server
that enforces the schema enforces it on every call."""

from __future__ import annotations

import abc
from typing import Any, Literal
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict

from memory import tracing
from memory.llm_usage import Usage as Usage
from memory.prompts import TaskInput, render

Task = Literal["extract_facts", "decide_facts", "extract_reflections", "consolidate", "same_fact"]

# Counts rejected answers, not attempts: a retry after a provider failure is the same request.
_REPAIR = "\n\n{rejected} rejected{why}. Answer again, briefly, following the rules above exactly."
# Each retry samples a little hotter: at temperature 0 the same request gets the same answer.
_TEMPERATURE_STEP = 0.3


class Retry(BaseModel):
    """Which attempt of a step this is (Temporal's count), how many of the earlier attempts' answers
    were rejected, and why the last one was, when known.

    A retry after a rejected answer never sends the failed request again byte for byte: it says
    why and samples hotter, since at temperature 0 the same request gets the same answer. A retry
    after a failure of the provider (a timeout, a 5xx, a rate limit) sends the same request: no
    answer was wrong, and a note saying one was would be untrue."""

    model_config = ConfigDict(frozen=True)

    attempt: int = 1
    rejected: str | None = None
    # None: not known (an attempt run by an older worker), so every earlier attempt counts.
    rejections: int | None = None

    @property
    def rejected_before(self) -> int:
        return self.attempt - 1 if self.rejections is None else self.rejections

    def prompt(self, prompt: str) -> str:
        if self.rejected_before == 0:
            return prompt
        n = self.rejected_before
        rejected = "An earlier answer was" if n == 1 else f"{n} earlier answers were"
        why = f" (the last: {escape(self.rejected[:300])})" if self.rejected else ""
        return prompt + _REPAIR.format(rejected=rejected, why=why)

    def temperature(self, temperature: float) -> float:
        hotter = round(min(1.0, temperature + _TEMPERATURE_STEP * self.rejected_before), 2)
        return max(temperature, hotter)


FIRST = Retry()


class LLMRequest(BaseModel):
    """A task's typed input and the text rendered from it.

    Real models read ``system`` and ``prompt``; the offline heuristic provider reads ``task_input``,
    so it never parses prose. Build one with ``LLMRequest.of`` so the text is the input's rendering.
    """

    model_config = ConfigDict(frozen=True)

    task_input: TaskInput
    model: str
    system: str
    prompt: str
    temperature: float = 0.0
    max_output_tokens: int = 4096
    attempt: int = 1  # Temporal's attempt of the step (traces show it)

    @property
    def task(self) -> Task:
        return self.task_input.task

    @classmethod
    def of(
        cls,
        task_input: TaskInput,
        *,
        model: str,
        temperature: float = 0.0,
        retry: Retry = FIRST,
    ) -> LLMRequest:
        """The output cap is the task's: it fits the schema's bounds, so a looping model is cut
        after a few hundred tokens instead of 4096. A retry says why and samples hotter."""
        rendered = render(task_input)
        return cls(
            task_input=task_input,
            model=model,
            system=rendered.system,
            prompt=retry.prompt(rendered.user),
            temperature=retry.temperature(temperature),
            max_output_tokens=rendered.max_output_tokens,
            attempt=retry.attempt,
        )


class LLMResult[T](BaseModel):
    model_config = ConfigDict(frozen=True)

    value: T
    usage: Usage
    raw: str | None = None  # the answer's text as received, when the provider has it


class LLMProvider(abc.ABC):
    """Providers raise memory.errors.ProviderError (retryable or not) and MalformedOutputError;
    they never retry by themselves: Temporal owns retries so every attempt is visible.

    Every subclass's calls are traced (memory.tracing): one span per call, with its model, tokens
    and attempt; a provider writes no tracing code of its own."""

    name: str
    # Answers are a function of the request alone (the offline rules): a retry answers the same,
    # and an answer never stops short of its bound (it fails beyond it instead).
    deterministic: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tracing.trace_llm_methods(cls)

    @abc.abstractmethod
    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]: ...

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP clients."""
