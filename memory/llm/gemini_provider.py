"""Gemini through the official google-genai SDK (Gemini Developer API)."""

from __future__ import annotations

from google import genai
from google.genai import types
from pydantic import BaseModel

from memory.errors import InputRefusedError, MalformedOutputError
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


class GeminiProvider(LLMProvider):
    name = "gemini"

    def __init__(self, *, api_key: str, timeout: float = 60.0, base_url: str | None = None) -> None:
        self._api_key = api_key
        # vertexai=False: an ambient GOOGLE_GENAI_USE_VERTEXAI must not reroute an API-key client.
        self._client = genai.Client(
            api_key=api_key, vertexai=False, http_options=gemini_http_options(timeout, base_url)
        )

    async def _generate(
        self, request: LLMRequest, schema: type[BaseModel]
    ) -> types.GenerateContentResponse:
        config = types.GenerateContentConfig(
            system_instruction=request.system,
            temperature=request.temperature,
            max_output_tokens=request.max_output_tokens,
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
