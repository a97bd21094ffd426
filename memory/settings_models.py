"""The ``models`` group of the settings (``MNEMOS_MODELS__*``): which LLM provider and models, and
how an OpenAI-compatible server is asked, in its own module to keep settings.py readable."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from memory.settings_group import SettingsGroup


class ModelSettings(SettingsGroup):
    """Model choice by purpose and tier (002 "LLM Model Selection")."""

    provider: Literal["auto", "openai", "gemini", "openai_compatible", "heuristic"] = Field(
        "auto",
        description="LLM provider; auto = the first that applies: models.base_url set →"
        " openai_compatible at it; models.api_key set → its vendor (gemini for a Google AIza… key,"
        " else openai); GEMINI_API_KEY or GOOGLE_API_KEY → gemini; OPENAI_API_KEY → openai; else"
        " heuristic (memory/llm/selection.py)",
    )
    fast: str = Field("gemini-3-flash-preview", description="Fact extraction and dedup decisions")
    standard: str = Field("gemini-3-flash-preview", description="Reflections/consolidation, tier 0")
    premium: str = Field("gemini-3-pro-preview", description="Reflections/consolidation, tier ≥ 1")
    openai_fast: str = Field("gpt-4.1-mini", description="Fast model when the provider is OpenAI")
    openai_standard: str = Field(
        "gpt-4.1-mini", description="Standard model when the provider is OpenAI"
    )
    openai_premium: str = Field("gpt-4.1", description="Premium model when the provider is OpenAI")
    base_url: str | None = Field(
        None,
        description="Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp…); under"
        " provider auto it wins over every vendor key in the environment",
    )
    api_key: SecretStr | None = Field(
        None,
        description="Key sent to the provider; wins over the vendor's variable, the fallback when"
        " unset (GEMINI_API_KEY or GOOGLE_API_KEY for gemini, OPENAI_API_KEY for openai, and for"
        " openai_compatible only at an *.openai.com base_url: no ambient key to another server)",
    )
    request_timeout_seconds: float = Field(60, gt=0, description="HTTP timeout of one LLM call")
    temperature: float = Field(0.0, ge=0, le=2, description="Sampling temperature")
    structured_output: Literal["json_schema", "json_object"] = Field(
        "json_schema",
        description="How OpenAI-compatible servers are asked for structured answers: json_schema"
        " (the server enforces the schema, e.g. llama.cpp's grammar) or json_object (JSON only,"
        " validated here) for servers without schema support; `mnemos check-model` says which works",
    )
    narrow_decisions: bool = Field(
        True,
        description="OpenAI-compatible servers get the dedup step's schema narrowed to each request"
        " (one decision per new fact, in order, as prefixItems, each index a shown fact's or null):"
        " turn off for a server whose grammar engine rejects prefixItems",
    )
    repeat_penalty: float | None = Field(
        1.1,
        ge=0,
        description="llama.cpp's repeat_penalty sent to OpenAI-compatible servers (None: not sent)",
    )
    frequency_penalty: float | None = Field(
        None, ge=-2, le=2, description="OpenAI frequency_penalty (None: not sent)"
    )
    context_tokens: int | None = Field(
        None,
        ge=2048,
        description="The model's context in tokens (e.g. llama.cpp -c 8192; None: hosted models,"
        " far larger): answers are capped to fit after the prompt, and formation windows are sized"
        " to a third of it unless formation.max_tokens_per_run is set",
    )
