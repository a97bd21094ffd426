"""One interface for every LLM provider: structured output (a pydantic model) or plain text."""

from __future__ import annotations

import abc
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Task = Literal["extract_facts", "decide_facts", "extract_reflections", "consolidate"]


class LLMRequest(BaseModel):
    """A prompt plus what it was built from.

    ``payload`` is the structured input the prompt renders (messages, facts, blobs). Real models read
    the prompt; the offline heuristic provider reads the payload, so it never parses prose.
    """

    model_config = ConfigDict(frozen=True)

    task: Task
    model: str
    system: str
    prompt: str
    payload: dict[str, Any] = Field(default_factory=dict)
    temperature: float = 0.0
    max_output_tokens: int = 4096


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
