"""Choosing the LLM provider and the model for each purpose (seed 002 "LLM Model Selection").

The provider modules import the OpenAI and Gemini SDKs, so they are imported only when chosen:
importing this package stays cheap for workflow code and for the offline heuristic path.
"""

from __future__ import annotations

from typing import Literal

import structlog

from memory.errors import ProviderError
from memory.llm.base import LLMProvider
from memory.llm.heuristic import MODEL as HEURISTIC_MODEL
from memory.llm.heuristic import HeuristicProvider
from memory.llm.selection import (
    Selection,
    gemini_api_key,
    openai_api_key,
    resolve_provider,
    select,
    url_host,
)
from memory.settings import Settings

Purpose = Literal["fast", "reflection", "consolidation"]


def make_llm(settings: Settings) -> LLMProvider:
    """The provider ``select`` chooses (the auto order is in selection.resolve_provider)."""
    models = settings.models
    chosen = select(settings)
    if chosen.key_withheld:
        _warn_key_withheld(chosen)
    match chosen.provider:
        case "gemini":
            from memory.llm.gemini_provider import GeminiProvider

            if not chosen.api_key:
                raise ProviderError(
                    "GEMINI_API_KEY (or GOOGLE_API_KEY, or MNEMOS_MODELS__API_KEY) is not set",
                    retryable=False,
                    provider="gemini",
                )
            return GeminiProvider(api_key=chosen.api_key, timeout=models.request_timeout_seconds)
        case "openai" | "openai_compatible" as name:
            from memory.llm.openai_provider import OpenAIProvider, ServerOptions

            if name == "openai" and not chosen.api_key:
                raise ProviderError(
                    "OPENAI_API_KEY (or MNEMOS_MODELS__API_KEY) is not set",
                    retryable=False,
                    provider=name,
                )
            if name == "openai_compatible" and not chosen.base_url:
                raise ProviderError(
                    "models.base_url is required for openai_compatible",
                    retryable=False,
                    provider=name,
                )
            return OpenAIProvider(
                api_key=chosen.api_key,
                base_url=chosen.base_url,
                timeout=models.request_timeout_seconds,
                name=name,
                options=ServerOptions(
                    structured_output=models.structured_output,
                    narrow_decisions=models.narrow_decisions,
                    repeat_penalty=models.repeat_penalty,
                    frequency_penalty=models.frequency_penalty,
                    context_tokens=models.context_tokens,
                ),
            )
        case _:
            return HeuristicProvider()


def _warn_key_withheld(chosen: Selection) -> None:
    """An exported OPENAI_API_KEY was not sent to a non-OpenAI base_url (selection.select): say
    so, with the host and the setting to use, never the key. Looked up per call, not cached, so a
    test's capture_logs sees it."""
    structlog.get_logger(__name__).warning(
        "openai_api_key_withheld",
        host=url_host(chosen.base_url) or "?",
        detail="OPENAI_API_KEY is set but is sent only to OpenAI's own hosts (*.openai.com), not"
        " to MNEMOS_MODELS__BASE_URL; this server gets no key. If it needs one, set"
        " MNEMOS_MODELS__API_KEY",
    )


def choose_model(settings: Settings, provider_name: str, purpose: Purpose, tier: int) -> str:
    """002: the fast model extracts facts and decides duplicates; reflections and consolidation use
    the standard model, or the premium one for agents of tier ≥ 1."""
    if provider_name == "heuristic":
        return HEURISTIC_MODEL
    models = settings.models
    use_openai = provider_name in ("openai", "openai_compatible")
    if purpose == "fast":
        return models.openai_fast if use_openai else models.fast
    if tier >= 1:
        return models.openai_premium if use_openai else models.premium
    return models.openai_standard if use_openai else models.standard


__all__ = [
    "LLMProvider",
    "choose_model",
    "gemini_api_key",
    "make_llm",
    "openai_api_key",
    "resolve_provider",
    "select",
]
