"""OpenAI and OpenAI-compatible servers through the official SDK (chat completions)."""

from __future__ import annotations

from typing import Literal

import openai
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel

from memory.errors import MalformedOutputError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.llm.errors import provider_errors

# Local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) usually ignore the key, but the SDK
# refuses to start without one.
_NO_KEY = "no-key"


class OpenAIProvider(LLMProvider):
    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
        name: Literal["openai", "openai_compatible"] | None = None,
    ) -> None:
        self.name = name or ("openai_compatible" if base_url else "openai")
        self._api_key = api_key
        self._client = openai.AsyncOpenAI(
            api_key=api_key or _NO_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # Temporal owns retries, so every attempt shows in the history
        )

    def _messages(self, request: LLMRequest) -> list[ChatCompletionMessageParam]:
        return [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ]

    def _usage(self, request: LLMRequest, model: str, usage: object) -> Usage:
        return Usage(
            provider=self.name,
            model=model or request.model,
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
        )

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        with provider_errors(self.name, [self._api_key]):
            # parse() sends the model as a strict JSON schema and validates the answer against it.
            completion = await self._client.chat.completions.parse(
                model=request.model,
                messages=self._messages(request),
                response_format=schema,
                temperature=request.temperature,
                max_completion_tokens=request.max_output_tokens,
            )
        if not completion.choices:
            raise MalformedOutputError(f"{self.name} returned no choices", provider=self.name)
        message = completion.choices[0].message
        if message.refusal:
            raise ProviderError(
                f"{self.name} refused: {message.refusal[:200]}", retryable=False, provider=self.name
            )
        if message.parsed is None:
            raise MalformedOutputError(f"{self.name} returned no content", provider=self.name)
        usage = self._usage(request, completion.model, completion.usage)
        return LLMResult[M](value=message.parsed, usage=usage)

    async def generate_text(self, request: LLMRequest) -> LLMResult[str]:
        with provider_errors(self.name, [self._api_key]):
            completion = await self._client.chat.completions.create(
                model=request.model,
                messages=self._messages(request),
                temperature=request.temperature,
                max_completion_tokens=request.max_output_tokens,
            )
        choice = completion.choices[0] if completion.choices else None
        if choice is None or not choice.message.content:
            raise MalformedOutputError(f"{self.name} returned no text", provider=self.name)
        if choice.finish_reason == "length":
            # A cut-off blob would silently lose its tail; a retry is cheaper than that.
            raise MalformedOutputError(
                f"{self.name} hit the output token limit", provider=self.name
            )
        usage = self._usage(request, completion.model, completion.usage)
        return LLMResult[str](value=choice.message.content, usage=usage)

    async def close(self) -> None:
        await self._client.close()
