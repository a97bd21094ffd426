"""One interface for every LLM provider: structured output (a pydantic model) or plain text."""

from __future__ import annotations

import abc
from typing import Literal

from pydantic import BaseModel, ConfigDict

from memory.prompts import TaskInput, render

Task = Literal["extract_facts", "decide_facts", "extract_reflections", "consolidate"]


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

    @property
    def task(self) -> Task:
        return self.task_input.task

    @classmethod
    def of(cls, task_input: TaskInput, *, model: str, temperature: float = 0.0) -> LLMRequest:
        rendered = render(task_input)
        return cls(
            task_input=task_input,
            model=model,
            system=rendered.system,
            prompt=rendered.user,
            temperature=temperature,
        )


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0


class LLMResult[T](BaseModel):
    model_config = ConfigDict(frozen=True)

    value: T
    usage: Usage


class LLMProvider(abc.ABC):
    """Providers raise memory.errors.ProviderError (retryable or not) and MalformedOutputError;
    they never retry by themselves: Temporal owns retries so every attempt is visible."""

    name: str

    @abc.abstractmethod
    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]: ...

    @abc.abstractmethod
    async def generate_text(self, request: LLMRequest) -> LLMResult[str]: ...

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release HTTP clients."""
