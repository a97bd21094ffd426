"""Which LLM provider, key and URL a configuration gets: the one rule, for make_llm and
``mnemos check-model`` alike.

Explicit mnemos settings (``MNEMOS_MODELS__*``) beat the vendors' conventional variables
(``GEMINI_API_KEY``, ``GOOGLE_API_KEY``, ``OPENAI_API_KEY``): those are often exported for other
tools, while a mnemos setting was written for mnemos. So under ``provider = "auto"`` an ambient
vendor key never outranks the server or the key the user configured, and never receives a key
meant for another vendor.

``OPENAI_API_KEY`` is OpenAI's key, so it goes to OpenAI only: an OpenAI-compatible server at
``models.base_url`` (a llama.cpp on another host, a third-party gateway) gets ``models.api_key`` or
no key at all, unless its URL is OpenAI's own (``is_openai_host``). ``make_llm`` says so when it
withholds an exported key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from memory.settings import Settings

ProviderName = Literal["openai", "gemini", "openai_compatible", "heuristic"]

# Google API keys start so (errors.py redacts the same shape); OpenAI's and other servers' do not.
_GOOGLE_KEY_PREFIX = "AIza"


def gemini_api_key() -> str | None:
    return os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY") or None


def openai_api_key() -> str | None:
    return os.environ.get("OPENAI_API_KEY") or None


def url_host(url: str | None) -> str | None:
    """The lower-cased host of ``url`` (never its credentials), None when it names none. A
    backslash in it counts as none: URL parsers disagree on where such a host ends."""
    if not url or "\\" in url:
        return None
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return None
    return (host.rstrip(".") or None) if host else None


def is_openai_host(url: str | None) -> bool:
    """Whether ``url`` names OpenAI's own API: host ``api.openai.com`` or another ``*.openai.com``.
    The one test of whether ``OPENAI_API_KEY`` may go to a URL; anything unparsable is not."""
    host = url_host(url)
    return host is not None and (host == "api.openai.com" or host.endswith(".openai.com"))


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
    # An exported OPENAI_API_KEY was kept from base_url, not OpenAI's: make_llm says so.
    key_withheld: bool = False


def select(settings: Settings) -> Selection:
    """The provider (``resolve_provider``), its key and its URL. The key is ``models.api_key`` when
    set, else the provider's conventional variable: GEMINI_API_KEY / GOOGLE_API_KEY for gemini,
    OPENAI_API_KEY for openai. For openai_compatible, OPENAI_API_KEY only when ``models.base_url``
    is OpenAI's own host (``is_openai_host``); any other server gets no key (``key_withheld`` when
    an OPENAI_API_KEY was exported), so a key exported for other tools never goes to a server the
    user did not give it to."""
    provider = resolve_provider(settings)
    explicit = configured_key(settings)
    match provider:
        case "gemini":
            return Selection(provider, explicit or gemini_api_key())
        case "openai":
            return Selection(provider, explicit or openai_api_key())
        case "openai_compatible":
            base_url = settings.models.base_url
            if explicit or is_openai_host(base_url):
                return Selection(provider, explicit or openai_api_key(), base_url)
            withheld = openai_api_key() is not None and base_url is not None
            return Selection(provider, None, base_url, key_withheld=withheld)
        case _:
            return Selection(provider)
