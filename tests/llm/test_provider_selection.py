"""Which vendor gets the request, and with which key, when mnemos settings and the vendors' own
variables are both in the environment. Two local servers stand in for Google and OpenAI (the SDKs'
GOOGLE_GEMINI_BASE_URL and OPENAI_BASE_URL point at them): the tests read who was asked."""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import pytest
from structlog.testing import capture_logs

from memory.llm import choose_model, make_llm, resolve_provider
from memory.llm.base import LLMRequest
from memory.llm.selection import is_openai_host, select
from memory.prompts.consolidate import ConsolidatedSections
from memory.settings import Settings
from tests.fake_provider_server import FakeProviderServer, Received, gemini_content, openai_chat
from tests.fakes import CONSOLIDATE_INPUT

ANSWER = json.dumps({"sections": [{"title": "", "items": ["Likes tea"]}]})
MNEMOS_OPENAI_KEY = "sk-mnemos-0123456789abcdef"
MNEMOS_GOOGLE_KEY = "AIzaMnemos0123456789abcdefghijkl"
AMBIENT_GEMINI_KEY = "AIzaAmbient0123456789abcdefghijk"
AMBIENT_OPENAI_KEY = "sk-ambient-0123456789abcdef"
VARIABLES = (
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GOOGLE_GEMINI_BASE_URL",
    "MNEMOS_MODELS__PROVIDER",
    "MNEMOS_MODELS__API_KEY",
    "MNEMOS_MODELS__BASE_URL",
)


@dataclass
class Vendors:
    google: FakeProviderServer
    openai: FakeProviderServer
    env: pytest.MonkeyPatch

    def set(self, **variables: str) -> None:
        for name, value in variables.items():
            self.env.setenv(name, value)


@pytest.fixture
def vendors(monkeypatch: pytest.MonkeyPatch) -> Iterator[Vendors]:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with FakeProviderServer() as google, FakeProviderServer() as openai:
        google.script(gemini_content(ANSWER))
        openai.script(openai_chat(ANSWER))
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", google.url)
        monkeypatch.setenv("OPENAI_BASE_URL", openai.openai_base_url)
        yield Vendors(google, openai, monkeypatch)


async def ask() -> str:
    """One real call with the settings a user's environment gives; the provider's name."""
    config = Settings()
    llm = make_llm(config)
    model = choose_model(config, llm.name, "consolidation", tier=0)
    try:
        result = await llm.generate_structured(
            LLMRequest(task_input=CONSOLIDATE_INPUT, model=model, system="s", prompt="p"),
            ConsolidatedSections,
        )
    finally:
        await llm.close()
    assert result.value.sections[0].items == ["Likes tea"]
    return llm.name


def bearer(request: Received) -> str:
    return request.headers["authorization"].removeprefix("Bearer ")


async def test_a_mnemos_key_goes_to_openai_not_to_gemini_whose_key_is_ambient(
    vendors: Vendors,
) -> None:
    vendors.set(MNEMOS_MODELS__API_KEY=MNEMOS_OPENAI_KEY, GEMINI_API_KEY=AMBIENT_GEMINI_KEY)

    assert await ask() == "openai"

    [sent] = vendors.openai.requests
    assert bearer(sent) == MNEMOS_OPENAI_KEY
    assert vendors.google.requests == []  # Google never saw the OpenAI key


async def test_a_mnemos_google_key_goes_to_gemini_not_to_openai_whose_key_is_ambient(
    vendors: Vendors,
) -> None:
    vendors.set(MNEMOS_MODELS__API_KEY=MNEMOS_GOOGLE_KEY, OPENAI_API_KEY=AMBIENT_OPENAI_KEY)

    assert await ask() == "gemini"

    [sent] = vendors.google.requests
    assert sent.headers["x-goog-api-key"] == MNEMOS_GOOGLE_KEY
    assert vendors.openai.requests == []


@pytest.mark.parametrize(
    ("provider", "ambient"),
    [("gemini", {"GEMINI_API_KEY": AMBIENT_GEMINI_KEY}), ("openai", {"OPENAI_API_KEY": "x"})],
)
async def test_with_an_explicit_provider_the_mnemos_key_beats_the_vendor_variable(
    vendors: Vendors, provider: str, ambient: dict[str, str]
) -> None:
    key = MNEMOS_GOOGLE_KEY if provider == "gemini" else MNEMOS_OPENAI_KEY
    vendors.set(MNEMOS_MODELS__PROVIDER=provider, MNEMOS_MODELS__API_KEY=key, **ambient)

    assert await ask() == provider

    if provider == "gemini":
        assert [r.headers["x-goog-api-key"] for r in vendors.google.requests] == [key]
    else:
        assert [bearer(r) for r in vendors.openai.requests] == [key]


async def test_a_configured_base_url_wins_over_every_vendor_key_under_auto(
    vendors: Vendors,
) -> None:
    """Ollama/vLLM/llama.cpp at MNEMOS_MODELS__BASE_URL, with Gemini and OpenAI keys exported for
    other tools: the local server answers, with the OpenAI-side model names."""
    with FakeProviderServer() as local:
        local.script(openai_chat(ANSWER))
        vendors.set(
            MNEMOS_MODELS__BASE_URL=local.openai_base_url,
            MNEMOS_MODELS__OPENAI_STANDARD="qwen2.5-7b-instruct",
            GEMINI_API_KEY=AMBIENT_GEMINI_KEY,
        )

        assert await ask() == "openai_compatible"

        [sent] = local.requests
    assert sent.body["model"] == "qwen2.5-7b-instruct"
    assert vendors.google.requests == [] and vendors.openai.requests == []
    # No key of Google's went to the local server either.
    assert AMBIENT_GEMINI_KEY not in json.dumps(sent.headers)


@pytest.mark.parametrize(
    ("env", "provider"),
    [
        ({}, "heuristic"),
        ({"OPENAI_API_KEY": AMBIENT_OPENAI_KEY}, "openai"),
        ({"GOOGLE_API_KEY": AMBIENT_GEMINI_KEY}, "gemini"),
        ({"GEMINI_API_KEY": AMBIENT_GEMINI_KEY, "OPENAI_API_KEY": AMBIENT_OPENAI_KEY}, "gemini"),
        ({"MNEMOS_MODELS__API_KEY": "any-other-key"}, "openai"),
        ({"MNEMOS_MODELS__API_KEY": MNEMOS_GOOGLE_KEY}, "gemini"),
        (
            {"MNEMOS_MODELS__API_KEY": MNEMOS_GOOGLE_KEY, "MNEMOS_MODELS__BASE_URL": "http://h/v1"},
            "openai_compatible",
        ),
        ({"MNEMOS_MODELS__BASE_URL": "http://h/v1", "OPENAI_API_KEY": "x"}, "openai_compatible"),
        ({"MNEMOS_MODELS__BASE_URL": "http://h/v1", "GEMINI_API_KEY": "x"}, "openai_compatible"),
        (
            {"MNEMOS_MODELS__PROVIDER": "heuristic", "MNEMOS_MODELS__BASE_URL": "http://h/v1"},
            "heuristic",
        ),
    ],
)
def test_the_documented_auto_order(vendors: Vendors, env: dict[str, str], provider: str) -> None:
    """base_url > the mnemos key's vendor > GEMINI/GOOGLE_API_KEY > OPENAI_API_KEY > heuristic;
    an explicit provider is used as it is."""
    vendors.set(**env)
    assert resolve_provider(Settings()) == provider


def test_the_chosen_key_never_shows_in_a_repr(vendors: Vendors) -> None:
    vendors.set(MNEMOS_MODELS__API_KEY=MNEMOS_OPENAI_KEY)
    chosen = select(Settings())
    assert chosen.api_key == MNEMOS_OPENAI_KEY
    assert MNEMOS_OPENAI_KEY not in repr(chosen)


def withheld_warnings(logs: list[MutableMapping[str, Any]]) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == "openai_api_key_withheld"]


async def test_a_server_at_base_url_gets_the_mnemos_key_or_none_never_the_exported_openai_key(
    vendors: Vendors,
) -> None:
    """OPENAI_API_KEY exported for other tools and a llama.cpp (or any gateway) at BASE_URL: the
    key is OpenAI's and stays with OpenAI; the server gets MNEMOS_MODELS__API_KEY, or no key."""
    with FakeProviderServer() as local:
        local.script(openai_chat(ANSWER), openai_chat(ANSWER))
        vendors.set(
            MNEMOS_MODELS__BASE_URL=local.openai_base_url, OPENAI_API_KEY=AMBIENT_OPENAI_KEY
        )

        with capture_logs() as logs:
            assert await ask() == "openai_compatible"
        vendors.set(MNEMOS_MODELS__API_KEY=MNEMOS_OPENAI_KEY)
        with capture_logs() as logs_with_key:
            assert await ask() == "openai_compatible"

        without_key, with_key = local.requests
    assert AMBIENT_OPENAI_KEY not in json.dumps(without_key.headers)
    assert bearer(without_key) != AMBIENT_OPENAI_KEY
    assert bearer(with_key) == MNEMOS_OPENAI_KEY
    assert vendors.openai.requests == []
    # Said once, where the provider is built: which host, and what to set; never the key.
    [warning] = withheld_warnings(logs)
    assert warning["log_level"] == "warning" and warning["host"] == "127.0.0.1"
    assert "MNEMOS_MODELS__API_KEY" in str(warning["detail"])
    assert AMBIENT_OPENAI_KEY not in repr(logs)
    assert withheld_warnings(logs_with_key) == []


@pytest.mark.parametrize(
    ("url", "openai"),
    [
        ("https://api.openai.com/v1", True),
        ("HTTPS://API.OpenAI.com/v1", True),
        ("https://eu.api.openai.com/v1", True),
        ("http://localhost:8080/v1", False),
        ("http://127.0.0.1:11434/v1", False),
        ("https://openai.com.evil.example/v1", False),
        ("https://evilopenai.com", False),
        ("https://evil.example/api.openai.com/v1", False),
        ("https://api.openai.com@evil.example/v1", False),  # credentials, then the real host
        ("https://api.openai.com\\@evil.example/v1", False),  # parsers disagree: not OpenAI's
        ("api.openai.com/v1", False),  # no scheme: no host to trust
    ],
)
def test_only_openai_hosts_get_the_exported_openai_key(
    vendors: Vendors, url: str, openai: bool
) -> None:
    assert is_openai_host(url) is openai
    vendors.set(MNEMOS_MODELS__BASE_URL=url, OPENAI_API_KEY=AMBIENT_OPENAI_KEY)
    chosen = select(Settings())
    assert chosen.provider == "openai_compatible"
    assert chosen.api_key == (AMBIENT_OPENAI_KEY if openai else None)
    assert chosen.key_withheld is not openai


def test_nothing_is_withheld_without_an_exported_openai_key(vendors: Vendors) -> None:
    vendors.set(MNEMOS_MODELS__BASE_URL="http://localhost:8080/v1")
    chosen = select(Settings())
    assert chosen.api_key is None and not chosen.key_withheld
