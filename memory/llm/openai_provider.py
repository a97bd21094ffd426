"""OpenAI and OpenAI-compatible servers (llama.cpp, vLLM, Ollama) through the official SDK.

Every answer is streamed, so a looping answer is cut as soon as it repeats itself (repetition.py)
instead of after its whole token budget. Structured answers are asked for with the task's schema
in strict form (schema.py), which the server enforces; a server without schema support is asked
for a JSON object (``structured_output = "json_object"``) and the answer validated here. Against
OpenAI-compatible servers the repetition controls they have are passed (llama.cpp's
``repeat_penalty``, the standard ``frequency_penalty``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import httpx2
import openai
import pydantic
from openai.types.chat import ChatCompletionMessageParam
from pydantic import BaseModel

from memory.errors import InputRefusedError, MalformedOutputError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.llm.context_fit import output_cap
from memory.llm.errors import provider_errors, unfit
from memory.llm.repetition import LoopDetector
from memory.llm.schema import Mode, parsed_answer, response_format
from memory.prompts.decide_facts import DecideFactsInput

# Local OpenAI-compatible servers (vLLM, llama.cpp, Ollama) usually ignore the key, but the SDK
# refuses to start without one; and given None it would send OPENAI_API_KEY, which selection.py
# keeps from servers that are not OpenAI's.
_NO_KEY = "no-key"
# A connection to a compatible server answers one request. llama.cpp's server (native and the
# xllamacpp wheel, "Keep-Alive: timeout=5, max=100") dropped a kept-alive connection without an
# answer ("Server disconnected"): `mnemos check-model` failed at its eighth call in every run (3
# of 3, 2026-11-27), with the SDK's keep-alive (5 s) and with 2 s alike, and passed with none;
# with the SDK's retries off, each such drop is a failed step. A new connection per call costs
# a local server nothing beside a model's seconds (a remote one, a handshake).


@dataclass(frozen=True)
class ServerOptions:
    """How requests are shaped for the server (settings ``models.*``, see memory/settings.py)."""

    structured_output: Mode = "json_schema"
    narrow_decisions: bool = True  # compatible servers only: see _decisions
    repeat_penalty: float | None = None  # llama.cpp's, sent in the body to compatible servers
    frequency_penalty: float | None = None
    context_tokens: int | None = None  # the server's context: answers capped to fit (context_fit)


@dataclass
class _Answer:
    text: str
    finish_reason: str | None
    usage: Usage


def _compatible_client() -> openai.DefaultAsyncHttpxClient:
    """The SDK's own HTTP client, keeping no connection for a next request (see above)."""
    return openai.DefaultAsyncHttpxClient(
        limits=httpx2.Limits(max_connections=1000, max_keepalive_connections=0)
    )


class OpenAIProvider(LLMProvider):
    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        timeout: float = 60.0,
        name: Literal["openai", "openai_compatible"] | None = None,
        options: ServerOptions | None = None,
    ) -> None:
        self.name = name or ("openai_compatible" if base_url else "openai")
        self.options = options or ServerOptions()
        self._api_key = api_key
        self._client = openai.AsyncOpenAI(
            api_key=api_key or _NO_KEY,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,  # Temporal owns retries, so every attempt shows in the history
            http_client=_compatible_client() if self.name == "openai_compatible" else None,
        )

    def _messages(self, request: LLMRequest) -> list[ChatCompletionMessageParam]:
        return [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ]

    def _params(self, request: LLMRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": self._messages(request),
            "temperature": request.temperature,
        }
        cap = output_cap(request, self.options.context_tokens)
        if self.name == "openai":
            params["max_completion_tokens"] = cap
        else:
            # The older name: llama.cpp, vLLM and Ollama all read it.
            params["max_tokens"] = cap
            if self.options.repeat_penalty is not None:
                params["extra_body"] = {"repeat_penalty": self.options.repeat_penalty}
        if self.options.frequency_penalty is not None:
            params["frequency_penalty"] = self.options.frequency_penalty
        return params

    async def _stream(self, request: LLMRequest, **extra: Any) -> _Answer:
        """The answer's text, read as it streams; a looping answer is cut (MalformedOutputError)."""
        started = time.perf_counter()
        first: float | None = None
        parts: list[str] = []
        finish: str | None = None
        model = ""
        usage: Any = None
        timings: Any = None
        loop = LoopDetector()
        with provider_errors(self.name, [self._api_key]):
            stream = await self._client.chat.completions.create(
                **self._params(request),
                **extra,
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = 0
            try:
                async for chunk in stream:
                    chunks += 1
                    model = chunk.model or model
                    usage = chunk.usage or usage
                    # llama.cpp's own figures: cache_n prompt tokens came from its cache.
                    timings = getattr(chunk, "timings", None) or timings
                    for choice in chunk.choices:
                        if choice.delta.content:
                            first = first or time.perf_counter() - started
                            parts.append(choice.delta.content)
                            loop.feed(choice.delta.content)
                        finish = choice.finish_reason or finish
                        if getattr(choice.delta, "refusal", None):
                            # The refusal's text is the model's words, often the user's too ("I
                            # can't store Bea's diagnosis"): an error says where and why, never
                            # what was said (errors.py ``unfit``), since it reaches logs and memos.
                            raise InputRefusedError(
                                f"{self.name} refused: the model declined to answer",
                                provider=self.name,
                            )
                    if loop.looping:
                        # Hanging up stops the generation on llama.cpp and vLLM.
                        raise MalformedOutputError(
                            f"{self.name} answer repeats itself (cut after "
                            f"{sum(map(len, parts))} characters)",
                            provider=self.name,
                            content="".join(parts),
                        )
            finally:
                await stream.close()
        if not chunks:  # a 200 whose body is no event stream (a proxy's HTML page)
            raise ProviderError(
                f"{self.name} sent a non-JSON response: no completion events",
                retryable=True,
                provider=self.name,
            )
        return _Answer(
            text="".join(parts),
            finish_reason=finish,
            usage=Usage(
                provider=self.name,
                model=model or request.model,
                input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                output_tokens=getattr(usage, "completion_tokens", 0) or 0,
                seconds=round(time.perf_counter() - started, 3),
                first_token_seconds=round(first, 3) if first is not None else None,
                cached_input_tokens=_cached(usage, timings),
            ),
        )

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        mode = self.options.structured_output
        narrow = self.options.narrow_decisions and self.name == "openai_compatible"
        decisions = _decisions(request) if narrow else None
        answer = await self._stream(
            request, response_format=response_format(schema, mode, _speakers(request), decisions)
        )
        if answer.finish_reason == "content_filter":
            # The provider's filter stopped the answer: refused as the SDK's
            # ContentFilterFinishReasonError is (errors.py), not asked again hotter.
            raise InputRefusedError(
                f"{self.name} refused: the answer was stopped by a content filter",
                provider=self.name,
            )
        if answer.finish_reason is None and not answer.text.strip():
            # The stream ended before the model said anything (the server went away): a transport
            # failure, retried as one, not an empty answer to reject.
            raise _ended_early(self.name)
        if answer.finish_reason == "length":
            raise MalformedOutputError(
                f"{self.name} output does not fit the schema: cut at the output token limit",
                provider=self.name,
                content=answer.text,
                usage=answer.usage,
            )
        if not answer.text.strip():
            raise MalformedOutputError(
                f"{self.name} returned no content", provider=self.name, usage=answer.usage
            )
        try:
            value = parsed_answer(schema, answer.text)
        except pydantic.ValidationError as e:
            if answer.finish_reason is None:
                # No finish reason: the stream ended before the answer did (the server went away
                # mid-answer). A transport failure, retried as one: not the model's output to
                # reject, nor a reason to sample hotter.
                raise _ended_early(self.name) from None
            raise MalformedOutputError(
                f"{self.name} output does not fit the schema: {unfit(e)}",
                provider=self.name,
                content=answer.text,
                usage=answer.usage,
            ) from None
        return LLMResult[M](value=value, usage=answer.usage, raw=answer.text)

    async def close(self) -> None:
        await self._client.close()


def _ended_early(provider: str) -> ProviderError:
    """The answer stream ended with no finish reason: the server went away mid-answer."""
    return ProviderError(
        f"{provider} answer stream ended before the answer (no finish reason)",
        retryable=True,
        provider=provider,
    )


def _cached(usage: Any, timings: Any) -> int | None:
    """Prompt tokens served from the server's prefix cache: OpenAI's usage details, else
    llama.cpp's timings; None when the server does not say."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None)
    if isinstance(cached, int):
        return cached
    if isinstance(timings, dict) and isinstance(timings.get("cache_n"), int):
        return int(timings["cache_n"])
    return None


def _decisions(request: LLMRequest) -> DecideFactsInput | None:
    """The decide step's input, whose answer a compatible server is asked to narrow to its own
    indices (decision_schema.py: prefixItems is not in hosted OpenAI's strict subset)."""
    inp = request.task_input
    return inp if isinstance(inp, DecideFactsInput) else None


def _speakers(request: LLMRequest) -> list[str] | None:
    """The speaker ids a ``speaker`` field may name: those of the prompt's messages (None when
    the task shows no messages)."""
    messages = getattr(request.task_input, "messages", None)
    if messages is None:
        return None
    return [m.user_id for m in messages if m.user_id]
