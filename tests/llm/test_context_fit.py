"""Prompts and answers that fit a small model's context (memory/llm/context_fit.py, the
``models.context_tokens`` setting): the cap sent on the wire leaves the prompt room, an extraction
window that leaves no room for an answer is split rather than sent, and the formation window
follows the context unless an operator sized it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from memory.errors import WindowTooLargeError
from memory.llm.base import LLMRequest
from memory.llm.context_fit import output_cap, prompt_tokens
from memory.llm.openai_provider import OpenAIProvider, ServerOptions
from memory.prompts.common import PromptMessage
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import Settings
from tests.fake_provider_server import FakeProviderServer, openai_chat
from tests.fakes import CONSOLIDATE_INPUT, DECIDE_INPUT, FACTS_INPUT

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _window(chars: int, text: str = "word ") -> LLMRequest:
    """A window of 10 messages holding ``chars`` characters of ``text`` repeated."""
    said = [
        PromptMessage(
            seq=n,
            role="user",
            name="Ana",
            content=text * (chars // len(text) // 10),
            created_at=AT,
        )
        for n in range(10)
    ]
    return LLMRequest.of(FACTS_INPUT.model_copy(update={"messages": said}), model="m")


def test_without_a_context_size_the_schema_cap_stands() -> None:
    request = _window(20_000)
    assert output_cap(request, None) == request.max_output_tokens


def test_the_cap_is_what_the_context_leaves_after_the_prompt() -> None:
    request = _window(12_000)
    cap = output_cap(request, 8192)
    assert cap < request.max_output_tokens  # the extraction's schema cap alone is 6,624 tokens
    assert prompt_tokens(request) + cap <= 8192


def test_an_extraction_with_no_room_left_splits_its_window() -> None:
    with pytest.raises(WindowTooLargeError, match="its input is split"):
        output_cap(_window(24_000), 8192)


def test_a_consolidation_with_no_room_left_splits_its_buffer() -> None:
    """A buffer grown past the model's context (ConsolidateScope halves it on this error)."""
    buffer = ["a reflection of some forty words " * 8] * 120
    request = LLMRequest.of(CONSOLIDATE_INPUT.model_copy(update={"reflections": buffer}), model="m")
    with pytest.raises(WindowTooLargeError, match="its input is split"):
        output_cap(request, 8192)
    half = LLMRequest.of(
        CONSOLIDATE_INPUT.model_copy(update={"reflections": buffer[:30]}), model="m"
    )
    assert output_cap(half, 8192) >= 256


def test_the_decision_step_is_capped_never_refused() -> None:
    request = LLMRequest.of(DECIDE_INPUT, model="m")
    tiny = prompt_tokens(request) + 100
    assert 0 < output_cap(request, tiny) <= request.max_output_tokens


async def test_the_fitted_cap_is_what_the_server_receives() -> None:
    request = _window(12_000)
    with FakeProviderServer() as server:
        server.script(openai_chat('{"facts": []}'))
        provider = OpenAIProvider(
            api_key=None,
            base_url=server.openai_base_url,
            name="openai_compatible",
            options=ServerOptions(context_tokens=8192),
        )
        await provider.generate_structured(request, ExtractedFacts)
        await provider.close()
        [sent] = server.requests
    assert sent.body["max_tokens"] == output_cap(request, 8192) < request.max_output_tokens


def test_the_formation_window_follows_the_models_context() -> None:
    assert Settings().formation.max_tokens_per_run == 8000
    small = Settings(models={"context_tokens": 8192})
    assert small.formation.max_tokens_per_run == 8192 // 3
    sized = Settings(models={"context_tokens": 8192}, formation={"max_tokens_per_run": 2000})
    assert sized.formation.max_tokens_per_run == 2000
    with pytest.raises(ValidationError, match="at most 2730"):
        Settings(models={"context_tokens": 8192}, formation={"max_tokens_per_run": 5000})


def test_a_window_at_its_bound_fits_an_8k_model() -> None:
    """The largest window formation builds for an 8k model still leaves the extraction room."""
    fits = Settings(models={"context_tokens": 8192}).formation
    request = _window(fits.max_chars_per_run)
    assert output_cap(request, 8192) >= 1024


@pytest.mark.parametrize(
    "text",
    [
        "今天天气很好，我们沿着河边散步。",
        "きょうはいいてんきです。",
        "오늘날씨가좋아요",
        "วันนี้อากาศดีมาก",
    ],
    ids=["chinese", "japanese", "korean", "thai"],
)
def test_a_script_without_spaces_counts_about_a_token_a_character(text: str) -> None:
    """A tokenizer gives Chinese, Japanese, Korean or Thai about a token a character, not a
    third of one: counted at 3 characters a token, a window mnemos thought fit was refused."""
    latin = prompt_tokens(_window(9_000))
    dense = prompt_tokens(_window(9_000, text))
    assert dense - latin >= 9_000 * 0.9 * (1 - 1 / 3)


def test_a_chinese_window_at_its_bound_is_split_before_it_is_sent() -> None:
    """The largest window formation builds for an 8k model, in Chinese: about 8,000 tokens, which
    leave the answer no room (the server would refuse it): split, not sent."""
    fits = Settings(models={"context_tokens": 8192}).formation
    request = _window(fits.max_chars_per_run, "今天天气很好，我们沿着河边散步。")
    with pytest.raises(WindowTooLargeError, match="its input is split"):
        output_cap(request, 8192)
