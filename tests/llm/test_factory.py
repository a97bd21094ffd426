"""make_llm / choose_model / make_embedder: which provider and model a configuration gets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory.embedding import embedding_vendor, make_embedder
from memory.embedding.gemini_embedder import GeminiEmbedder
from memory.embedding.local import LocalMiniLMEmbedder
from memory.embedding.openai_embedder import OpenAIEmbedder
from memory.errors import ProviderError
from memory.llm import Purpose, choose_model, make_llm
from memory.llm.base import LLMProvider, LLMRequest
from memory.llm.gemini_provider import GeminiProvider
from memory.llm.heuristic import HeuristicProvider
from memory.llm.openai_provider import OpenAIProvider
from memory.prompts.consolidate import ConsolidatedSections
from memory.settings import EmbeddingSettings, ModelSettings, Settings
from tests.fake_provider_server import FakeProviderServer, openai_chat
from tests.fakes import CONSOLIDATE_INPUT

KEYS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """Start every test from an environment without provider keys."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch


def settings(**models: object) -> Settings:
    return Settings(models=ModelSettings.model_validate(models))


async def built(config: Settings) -> LLMProvider:
    llm = make_llm(config)
    await llm.close()
    return llm


async def test_auto_without_keys_is_the_offline_heuristic() -> None:
    assert isinstance(await built(settings()), HeuristicProvider)


@pytest.mark.parametrize("variable", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
async def test_auto_prefers_gemini_when_its_key_is_set(
    no_keys: pytest.MonkeyPatch, variable: str
) -> None:
    no_keys.setenv(variable, "AIza-test")
    no_keys.setenv("OPENAI_API_KEY", "sk-test")
    llm = await built(settings())
    assert isinstance(llm, GeminiProvider) and llm.name == "gemini"


async def test_auto_uses_openai_with_only_an_openai_key(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv("OPENAI_API_KEY", "sk-test")
    llm = await built(settings())
    assert isinstance(llm, OpenAIProvider) and llm.name == "openai"


async def test_auto_with_a_base_url_is_openai_compatible() -> None:
    llm = await built(settings(base_url="http://127.0.0.1:9/v1"))
    assert isinstance(llm, OpenAIProvider) and llm.name == "openai_compatible"


async def test_an_explicit_provider_wins_over_the_environment(no_keys: pytest.MonkeyPatch) -> None:
    no_keys.setenv("GEMINI_API_KEY", "AIza-test")
    assert isinstance(await built(settings(provider="heuristic")), HeuristicProvider)
    no_keys.setenv("OPENAI_API_KEY", "sk-test")
    assert (await built(settings(provider="openai"))).name == "openai"


@pytest.mark.parametrize(
    ("provider", "missing"),
    [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY"), ("openai_compatible", "base_url")],
)
def test_an_explicit_provider_without_its_key_fails_at_once(provider: str, missing: str) -> None:
    with pytest.raises(ProviderError, match=missing) as caught:
        make_llm(settings(provider=provider))
    assert not caught.value.retryable


async def test_an_openai_compatible_server_gets_the_configured_key_and_model() -> None:
    with FakeProviderServer() as server:
        server.script(openai_chat('{"sections": [{"title": "", "items": ["Likes tea"]}]}'))
        config = settings(
            provider="openai_compatible",
            base_url=server.openai_base_url,
            api_key="local-key",
            openai_standard="qwen2.5-7b-instruct",
        )
        llm = make_llm(config)
        model = choose_model(config, llm.name, "consolidation", tier=0)
        try:
            result = await llm.generate_structured(
                LLMRequest(task_input=CONSOLIDATE_INPUT, model=model, system="s", prompt="p"),
                ConsolidatedSections,
            )
        finally:
            await llm.close()
        [sent] = server.requests
    assert result.value.sections[0].items == ["Likes tea"]
    assert result.usage.provider == "openai_compatible"
    assert sent.headers["authorization"] == "Bearer local-key"
    assert sent.body["model"] == "qwen2.5-7b-instruct"


DISTINCT = settings(
    fast="g-fast",
    standard="g-standard",
    premium="g-premium",
    openai_fast="o-fast",
    openai_standard="o-standard",
    openai_premium="o-premium",
)


@pytest.mark.parametrize(
    ("provider", "purpose", "tier", "model"),
    [
        ("gemini", "fast", 0, "g-fast"),
        ("gemini", "fast", 2, "g-fast"),
        ("gemini", "reflection", 0, "g-standard"),
        ("gemini", "reflection", 1, "g-premium"),
        ("gemini", "consolidation", 0, "g-standard"),
        ("gemini", "consolidation", 5, "g-premium"),
        ("openai", "fast", 1, "o-fast"),
        ("openai", "reflection", 0, "o-standard"),
        ("openai", "consolidation", 1, "o-premium"),
        ("openai_compatible", "reflection", 1, "o-premium"),
        ("heuristic", "fast", 0, "heuristic-rules-v1"),
        ("heuristic", "consolidation", 3, "heuristic-rules-v1"),
    ],
)
def test_choose_model_by_purpose_and_tier(
    provider: str, purpose: Purpose, tier: int, model: str
) -> None:
    assert choose_model(DISTINCT, provider, purpose, tier) == model


def test_the_default_models_follow_seed_002() -> None:
    config = settings()
    assert choose_model(config, "gemini", "fast", 0) == "gemini-3-flash-preview"
    assert choose_model(config, "gemini", "reflection", 0) == "gemini-3-flash-preview"
    assert choose_model(config, "gemini", "reflection", 1) == "gemini-3-pro-preview"


def embedding_settings(embedder: str, **models: object) -> Settings:
    return Settings(
        embedding=EmbeddingSettings.model_validate({"provider": embedder}),
        models=ModelSettings.model_validate(models),
    )


async def test_embedder_choice(no_keys: pytest.MonkeyPatch) -> None:
    local = make_embedder(embedding_settings("auto"))
    assert isinstance(local, LocalMiniLMEmbedder)
    assert isinstance(make_embedder(embedding_settings("local")), LocalMiniLMEmbedder)

    no_keys.setenv("GEMINI_API_KEY", "AIza-test")
    gemini = make_embedder(embedding_settings("auto"))
    assert isinstance(gemini, GeminiEmbedder)
    assert (gemini.model, gemini.dimension) == ("gemini-embedding-001", 768)

    no_keys.delenv("GEMINI_API_KEY")
    no_keys.setenv("OPENAI_API_KEY", "sk-test")
    openai = make_embedder(embedding_settings("auto"))
    assert isinstance(openai, OpenAIEmbedder)
    assert (openai.model, openai.dimension) == ("text-embedding-3-small", 1536)
    for embedder in (local, gemini, openai):
        await embedder.close()


def test_auto_embeddings_follow_the_llms_vendor(no_keys: pytest.MonkeyPatch) -> None:
    """With both vendors' keys exported the LLM is Gemini's (the settings' order), and so are the
    embeddings: the facts go to one vendor, not to OpenAI because its key is also there."""
    no_keys.setenv("GEMINI_API_KEY", "AIza-env")
    no_keys.setenv("OPENAI_API_KEY", "sk-env")
    assert embedding_vendor(embedding_settings("auto")) == ("gemini", "AIza-env")
    chosen = embedding_settings("auto", provider="openai")
    assert embedding_vendor(chosen) == ("openai", "sk-env")


def test_auto_embeddings_stay_local_beside_a_local_llm(no_keys: pytest.MonkeyPatch) -> None:
    """An LLM on the user's own server and an OPENAI_API_KEY exported for other tools: the facts'
    vectors are made here, not at OpenAI."""
    no_keys.setenv("OPENAI_API_KEY", "sk-env")
    own = embedding_settings("auto", base_url="http://127.0.0.1:8080/v1")
    assert embedding_vendor(own) == ("local", None)
    assert isinstance(make_embedder(own), LocalMiniLMEmbedder)
    offline = embedding_settings("auto", provider="heuristic")
    assert embedding_vendor(offline) == ("local", None)


def test_an_embedder_gets_the_llms_key_only_from_the_same_vendor(
    no_keys: pytest.MonkeyPatch,
) -> None:
    configured = embedding_settings("openai", provider="openai", api_key="sk-configured")
    assert embedding_vendor(configured) == ("openai", "sk-configured")
    # A key configured for the user's own server never goes to OpenAI's embeddings.
    own = {"base_url": "http://127.0.0.1:8080/v1", "api_key": "own-server-key"}
    assert embedding_vendor(embedding_settings("openai", **own)) == ("openai", None)
    no_keys.setenv("OPENAI_API_KEY", "sk-env")
    assert embedding_vendor(embedding_settings("openai", **own)) == ("openai", "sk-env")
    with pytest.raises(ProviderError):
        make_embedder(embedding_settings("gemini", provider="openai", api_key="sk-configured"))


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_remote_embedder_without_its_key_fails_at_once(provider: str) -> None:
    with pytest.raises(ProviderError) as caught:
        make_embedder(embedding_settings(provider))
    assert not caught.value.retryable
