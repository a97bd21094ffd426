"""Gemini through the official google-genai SDK (Gemini Developer API).

Thinking models count their thoughts against ``maxOutputTokens`` (googleapis/python-genai#2062,
#811): sent a task's tight answer cap and left to think at their default, they spend it all
thinking and answer nothing (finish_reason MAX_TOKENS). So each request says how little to think,
by the model's family (``thinking_for``), and where thinking cannot be turned off the cap grows by
an allowance for it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from google import genai
from google.genai import types
from pydantic import BaseModel

from memory.errors import InputRefusedError, MalformedOutputError, ProviderError
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.llm.errors import provider_errors
from memory.llm.schema import parsed_answer


def gemini_http_options(timeout: float, base_url: str | None) -> types.HttpOptions:
    """One attempt per call (Temporal owns retries); the timeout is in milliseconds for the SDK."""
    return types.HttpOptions(
        base_url=base_url,
        timeout=max(1, round(timeout * 1000)),
        retry_options=types.HttpRetryOptions(attempts=1),
    )


# Tokens added to an answer's cap for the thoughts of a model that cannot stop thinking: at its
# lowest level (or 2.5 Pro's least budget, which it may overrun) a yes/no or one decision takes
# far fewer; a cap is not a charge, only what is generated is billed.
THINKING_ALLOWANCE = 1024
# Gemini 2.5 Pro's least thinking budget: 0 is rejected, thinking cannot be off there.
PRO_25_LEAST_BUDGET = 128
_VERSION = re.compile(r"gemini-(\d+)(?:\.(\d+))?-")


@dataclass(frozen=True)
class Thinking:
    """How little a model is asked to think, and the tokens its thoughts are given on top."""

    config: types.ThinkingConfig | None
    allowance: int = 0


def thinking_for(model: str) -> Thinking:
    """The least thinking ``model`` accepts, by family (ai.google.dev/gemini-api/docs/thinking):
    Gemini 3 and later take a level (MINIMAL on Flash and Flash-Lite, LOW on Pro; none can stop
    thinking); 2.5 a budget (0 turns Flash's and Flash-Lite's off; Pro's least is 128). Older
    models and names of no Gemini family (gemini-2.0, gemma, a tuned model) get no
    thinkingConfig: gemini-2.0 answers one with a 400 "thinking is not supported by this model"."""
    name = model.lower().removeprefix("models/")
    found = _VERSION.match(name)
    if found is None:
        return _unversioned(name)
    version = (int(found.group(1)), int(found.group(2) or 0))
    if version >= (3, 0):
        level = types.ThinkingLevel.MINIMAL if "flash" in name else types.ThinkingLevel.LOW
        return Thinking(types.ThinkingConfig(thinking_level=level), THINKING_ALLOWANCE)
    if version == (2, 5) and "pro" in name:
        budget = types.ThinkingConfig(thinking_budget=PRO_25_LEAST_BUDGET)
        return Thinking(budget, THINKING_ALLOWANCE)
    if version == (2, 5):
        return Thinking(types.ThinkingConfig(thinking_budget=0))
    return Thinking(None)


def _unversioned(name: str) -> Thinking:
    """A gemini-* name of no version (gemini-pro-latest, gemini-flash-latest, an experimental
    name) is today's thinking model of its family, which may not stop thinking: left at its
    default, a tight cap is spent thinking. So it is asked for the level its family name suggests,
    with the allowance; a model that takes no such config answers a 400 about thinking and is
    asked again without it, the allowance kept (GeminiProvider._generate)."""
    if not name.startswith("gemini-"):
        return Thinking(None)
    level = types.ThinkingLevel.MINIMAL if "flash" in name else types.ThinkingLevel.LOW
    return Thinking(types.ThinkingConfig(thinking_level=level), THINKING_ALLOWANCE)


def rejects_thinking(err: ProviderError) -> bool:
    """A 400 about the thinking config: the model takes none, or not the level asked."""
    return err.status == 400 and "thinking" in str(err).lower()


class GeminiProvider(LLMProvider):
    name = "gemini"

    def __init__(self, *, api_key: str, timeout: float = 60.0, base_url: str | None = None) -> None:
        self._api_key = api_key
        # Models that answered a thinking config with a 400: asked without one from then on.
        self._no_thinking_config: set[str] = set()
        # vertexai=False: an ambient GOOGLE_GENAI_USE_VERTEXAI must not reroute an API-key client.
        self._client = genai.Client(
            api_key=api_key, vertexai=False, http_options=gemini_http_options(timeout, base_url)
        )

    async def _generate(
        self, request: LLMRequest, schema: type[BaseModel]
    ) -> types.GenerateContentResponse:
        thinking = thinking_for(request.model)
        if thinking.config is not None and request.model not in self._no_thinking_config:
            try:
                return await self._send(request, schema, thinking)
            except ProviderError as err:
                if not rejects_thinking(err):
                    raise
                # A model (of a known family, or an alias) that takes no thinking config, or not
                # this level: asked again without one (its default thinking, the allowance on top).
                self._no_thinking_config.add(request.model)
        return await self._send(request, schema, Thinking(None, thinking.allowance))

    async def _send(
        self, request: LLMRequest, schema: type[BaseModel], thinking: Thinking
    ) -> types.GenerateContentResponse:
        config = types.GenerateContentConfig(
            system_instruction=request.system,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens + thinking.allowance,
            thinking_config=thinking.config,
            response_mime_type="application/json",
            response_schema=schema,
        )
        with provider_errors(self.name, [self._api_key]):
            return await self._client.aio.models.generate_content(
                model=request.model, contents=request.prompt, config=config
            )

    def _text(self, response: types.GenerateContentResponse) -> str:
        text = response.text
        if not text:
            candidate = response.candidates[0] if response.candidates else None
            reason = candidate.finish_reason if candidate else None
            blocked = response.prompt_feedback.block_reason if response.prompt_feedback else None
            if blocked is not None:
                # The prompt itself was blocked (safety): asked again, it is blocked again.
                raise InputRefusedError(
                    f"gemini refused: block_reason={blocked}", provider=self.name
                )
            raise MalformedOutputError(
                f"gemini returned no text (finish_reason={reason}, block_reason={blocked})",
                provider=self.name,
            )
        return text

    def _usage(self, request: LLMRequest, response: types.GenerateContentResponse) -> Usage:
        meta = response.usage_metadata
        return Usage(
            provider=self.name,
            model=response.model_version or request.model,
            input_tokens=(meta.prompt_token_count or 0) if meta else 0,
            # Thinking tokens are billed as output.
            output_tokens=((meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0))
            if meta
            else 0,
        )

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        response = await self._generate(request, schema)
        usage = self._usage(request, response)
        try:
            text = self._text(response)
            # The SDK leaves ``parsed`` as None when validation fails and swallows why;
            # validating again here gives MalformedOutputError its reason.
            parsed = response.parsed
            with provider_errors(self.name, [self._api_key]):
                value = parsed if isinstance(parsed, schema) else parsed_answer(schema, text)
        except MalformedOutputError as err:
            err.usage = usage  # an unusable answer costs its tokens too
            raise
        return LLMResult[M](value=value, usage=usage)

    async def close(self) -> None:
        await self._client.aio.aclose()
