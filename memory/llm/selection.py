"""Which LLM provider, key and URL a configuration gets: the one rule, for make_llm and
``mnemos check-model`` alike.

Explicit mnemos settings (``MNEMOS_MODELS__*``) beat the vendors' conventional variables
(``GEMINI_API_KEY``, ``GOOGLE_API_KEY``, ``OPENAI_API_KEY``): those are often exported for other
tools, while a mnemos setting was written for mnemos. So under ``provider = "auto"`` an ambient
vendor key never outranks the server or the key the user configured, and never receives a key
meant for another vendor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from memory.settings import Settings

ProviderName = Literal["openai", "gemini", "openai_compatible", "heuristic"]

# Google API keys start so (errors.py redacts the same shape); OpenAI's and other servers' do not.
_GOOGLE_KEY_PREFIX = "AIza"


def gemini_api_key() -> str | None:
    return os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or None


def openai_api_key() -> str | None:
    return os.environ.get("OPENAI_API_KEY") or None


def configured_key(settings: Settings) -> str | None:
    key = settings.models.api_key
    return (key.get_secret_value() or None) if key is not None else None


def resolve_provider(settings: Settings) -> ProviderName:
    """The provider ``make_llm`` builds. An explicit ``models.provider`` is used as it is;
    ``auto`` takes the first that applies:

    1. ``models.base_url`` set: ``openai_compatible`` at that URL (Ollama, vLLM, llama.cpp…);
    2. ``models.api_key`` set: the vendor the key belongs to, ``gemini`` for a Google key
       (``AIza…``), else ``openai``;
    3. ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``: ``gemini``;
    4. ``OPENAI_API_KEY``: ``openai``;
    5. none of these: the offline ``heuristic``.
    """
    models = settings.models
    if models.provider != "auto":
        return models.provider
    if models.base_url:
        return "openai_compatible"
    if key := configured_key(settings):
        return "gemini" if key.startswith(_GOOGLE_KEY_PREFIX) else "openai"
    if gemini_api_key():
        return "gemini"
    if openai_api_key():
        return "openai"
    return "heuristic"


@dataclass(frozen=True)
class Selection:
    provider: ProviderName
    api_key: str | None = field(default=None, repr=False)  # repr=False: never in a log line
    base_url: str | None = None


def select(settings: Settings) -> Selection:
    """The provider (``resolve_provider``), its key and its URL. The key is ``models.api_key`` when
    set, else the provider's conventional variable: GEMINI_API_KEY / GOOGLE_API_KEY for gemini,
    OPENAI_API_KEY for openai and openai_compatible (the OpenAI SDK's own convention)."""
    provider = resolve_provider(settings)
    explicit = configured_key(settings)
    match provider:
        case "gemini":
            return Selection(provider, explicit or gemini_api_key())
        case "openai":
            return Selection(provider, explicit or openai_api_key())
        case "openai_compatible":
            return Selection(provider, explicit or openai_api_key(), settings.models.base_url)
        case _:
            return Selection(provider)
