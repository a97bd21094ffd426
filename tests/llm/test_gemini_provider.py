"""GeminiProvider against a local server that speaks the Gemini API: the real SDK, no patching."""

from __future__ import annotations

import json
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from memory.errors import InputRefusedError, MalformedOutputError, ProviderError
from memory.llm.base import LLMRequest, Usage
from memory.llm.gemini_provider import THINKING_ALLOWANCE, GeminiProvider
from memory.prompts.consolidate import ConsolidatedSections, blob_text
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.same_fact import SameFact, SameFactInput
from tests.fake_provider_server import (
    FakeProviderServer,
    Received,
    Reply,
    gemini_content,
    google_error,
)
from tests.fakes import CONSOLIDATE_INPUT, DECIDE_INPUT

API_KEY = "AIzaSyTest0123456789abcdefghijklmnop"
REQUEST = LLMRequest(
    task_input=DECIDE_INPUT,
    model="gemini-3-flash-preview",
    system="You decide whether facts are new.",
    prompt="<new_facts>0: Alice is 31</new_facts>",
    temperature=0.0,
    max_output_tokens=512,
)
DECISION = {
    "new_fact_index": 0,
    "event": "UPDATE",
    "existing_index": 2,
    "merged_text": "Alice is 31",
}
RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
async def provider(server: FakeProviderServer) -> AsyncIterator[GeminiProvider]:
    llm = GeminiProvider(api_key=API_KEY, timeout=10, base_url=server.url)
    yield llm
    await llm.close()


async def failure(provider: GeminiProvider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await provider.generate_structured(REQUEST, FactDecisions)
    return caught.value


async def test_structured_output_is_validated_and_usage_comes_from_usage_metadata(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(
        gemini_content(
            json.dumps({"decisions": [DECISION]}),
            model_version="gemini-3-flash-preview-09-2026",
            prompt_tokens=120,
            output_tokens=30,
            thoughts_tokens=12,
        )
    )

    result = await provider.generate_structured(REQUEST, FactDecisions)

    assert result.value == FactDecisions(decisions=[FactDecision(**DECISION)])
    # Thinking tokens are billed as output, so they count.
    assert result.usage == Usage(
        provider="gemini",
        model="gemini-3-flash-preview-09-2026",
        input_tokens=120,
        output_tokens=42,
    )
    [sent] = server.requests
    assert sent.path.endswith("/models/gemini-3-flash-preview:generateContent")
    assert sent.headers["x-goog-api-key"] == API_KEY
    assert sent.body["contents"] == [{"role": "user", "parts": [{"text": REQUEST.prompt}]}]
    assert sent.body["systemInstruction"]["parts"] == [{"text": REQUEST.system}]
    config = sent.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["temperature"] == 0.0
    # Gemini 3 Flash thinks a little even at MINIMAL: its thoughts get room beside the answer.
    assert config["maxOutputTokens"] == 512 + THINKING_ALLOWANCE
    assert _thinking(config) == {"thinking_level": "MINIMAL"}
    decision_schema = config["responseSchema"]["properties"]["decisions"]["items"]
    assert decision_schema["properties"]["event"]["enum"] == ["ADD", "UPDATE", "DELETE", "NONE"]
    assert decision_schema["properties"]["existing_index"]["nullable"] is True


async def test_consolidation_answers_bounded_items_in_json_mode(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    answer = {"sections": [{"title": "PREFERENCES", "items": ["Prefers tea"]}]}
    server.script(gemini_content(json.dumps(answer), prompt_tokens=50, output_tokens=8))

    result = await provider.generate_structured(
        REQUEST.model_copy(update={"task_input": CONSOLIDATE_INPUT}), ConsolidatedSections
    )

    assert blob_text(result.value, 4) == "VERSION: 4\n[PREFERENCES]\n- Prefers tea"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (50, 8)
    [sent] = server.requests
    config = sent.body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    items = config["responseSchema"]["properties"]["sections"]["items"]["properties"]["items"]
    assert items["items"]["type"] == "STRING"


async def test_the_second_look_at_a_restatement_answers_a_boolean(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(gemini_content('{"same": true}', prompt_tokens=60, output_tokens=4))
    pair = SameFactInput(stored="Alice's birthday is on March 3.", new="Alice was born on March 3.")

    result = await provider.generate_structured(LLMRequest.of(pair, model="gemini-x"), SameFact)

    assert result.value.same is True
    [sent] = server.requests
    schema = sent.body["generationConfig"]["responseSchema"]
    assert schema["properties"]["same"]["type"] == "BOOLEAN" and schema["required"] == ["same"]
    assert "Alice was born on March 3." in json.dumps(sent.body["contents"])


async def test_rate_limit_with_a_retry_after_header(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(google_error(429, "Resource exhausted", headers={"Retry-After": "12"}))

    error = await failure(provider)

    assert (error.retryable, error.status, error.retry_after) == (True, 429, 12.0)
    assert len(server.requests) == 1  # no SDK retry: Temporal owns retries


async def test_rate_limit_with_googles_retry_info_in_the_body(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(google_error(429, "Quota exceeded", details=[RETRY_INFO]))

    error = await failure(provider)

    assert (error.retryable, error.status, error.retry_after) == (True, 429, 37.0)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [408, 500, 503, 504])
async def test_server_side_failures_are_retryable_and_sent_once(
    server: FakeProviderServer, provider: GeminiProvider, status: int
) -> None:
    server.script(google_error(status, "backend error"))

    error = await failure(provider)

    assert (error.retryable, error.status) == (True, status)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_client_errors_are_not_retryable(
    server: FakeProviderServer, provider: GeminiProvider, status: int
) -> None:
    server.script(google_error(status, "bad request"))

    error = await failure(provider)

    assert (error.retryable, error.status, error.retry_after) == (False, status, None)
    assert len(server.requests) == 1


async def test_a_reply_slower_than_the_timeout_is_a_retryable_timeout(
    server: FakeProviderServer,
) -> None:
    server.script(Reply(body={}, delay=30))
    provider = GeminiProvider(api_key=API_KEY, timeout=0.3, base_url=server.url)
    started = time.monotonic()
    try:
        error = await failure(provider)
    finally:
        await provider.close()

    assert error.retryable and error.status is None
    assert "timed out" in str(error)
    assert time.monotonic() - started < 5
    assert len(server.wait_for_requests(1)) == 1


async def test_an_unreachable_server_is_a_retryable_connection_error() -> None:
    with FakeProviderServer() as gone:
        url = gone.url
    provider = GeminiProvider(api_key=API_KEY, timeout=5, base_url=url)
    try:
        error = await failure(provider)
    finally:
        await provider.close()
    assert error.retryable and error.status is None


@pytest.mark.parametrize(
    "text",
    [
        '{"decisions": [{"new_fact_index": 0',  # cut-off JSON
        "I think the fact is new.",  # not JSON at all
        json.dumps({"decisions": [{**DECISION, "event": "MERGE"}]}),  # fails the schema
        json.dumps({"decisions": [{"new_fact_index": 0}]}),  # required fields missing
    ],
)
async def test_output_that_does_not_fit_the_schema_is_malformed(
    server: FakeProviderServer, provider: GeminiProvider, text: str
) -> None:
    server.script(gemini_content(text, prompt_tokens=42, output_tokens=9))

    with pytest.raises(MalformedOutputError) as caught:
        await provider.generate_structured(REQUEST, FactDecisions)

    assert caught.value.retryable
    assert len(server.requests) == 1
    # The unusable answer cost its tokens: the token metrics count them (memory.tracing).
    usage = caught.value.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (42, 9)


async def test_a_body_that_is_not_json_is_a_retryable_provider_error(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(Reply(body=b"<html>502 Bad Gateway</html>"))

    error = await failure(provider)

    assert error.retryable and not isinstance(error, MalformedOutputError)
    assert "non-JSON" in str(error)


async def test_no_text_at_all_is_malformed_and_says_why(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(gemini_content(None, finish_reason="SAFETY"))

    with pytest.raises(MalformedOutputError) as caught:
        await provider.generate_structured(REQUEST, FactDecisions)

    assert "SAFETY" in str(caught.value)


async def test_a_blocked_prompt_is_a_refusal_of_the_input(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    """Asked again, a blocked prompt is blocked again: the workflow splits its window instead."""
    server.script(Reply(body={"candidates": [], "promptFeedback": {"blockReason": "SAFETY"}}))

    with pytest.raises(InputRefusedError) as caught:
        await provider.generate_structured(REQUEST, FactDecisions)

    assert "SAFETY" in str(caught.value) and not caught.value.retryable


async def test_an_answer_cut_by_the_token_limit_is_malformed(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(gemini_content('{"sections": [{"title": "PRE', finish_reason="MAX_TOKENS"))

    with pytest.raises(MalformedOutputError):
        await provider.generate_structured(REQUEST, ConsolidatedSections)


async def test_the_api_key_never_appears_in_the_error(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    server.script(google_error(400, f"API key not valid: {API_KEY}. Please pass a valid API key."))

    error = await failure(provider)

    assert not error.retryable
    assert API_KEY not in str(error)
    assert "[redacted]" in str(error)
    assert error.__cause__ is None and error.__suppress_context__


def _thinking(config: dict[str, Any]) -> dict[str, Any] | None:
    """The thinkingConfig sent, its keys in snake_case: the SDK passes this one through as its
    fields are named (as it does responseSchema's max_length), which the API's proto3 JSON
    parsing accepts as well as the camelCase names."""
    sent = config.get("thinkingConfig")
    if sent is None:
        return None
    return {re.sub(r"(?<!^)(?=[A-Z])", "_", k).lower(): v for k, v in sent.items()}


def _thoughts(config: dict[str, Any]) -> int:
    """The thought tokens of a thinking model (python-genai#2062): none when turned off or at
    MINIMAL, the budget when one is set, a little at LOW, plenty at its default."""
    thinking = _thinking(config) or {}
    budget = thinking.get("thinking_budget")
    if budget is not None:
        return int(budget)
    return {"MINIMAL": 0, "LOW": 64}.get(thinking.get("thinking_level", ""), 512)


def _thinking_model(answer: dict[str, Any]) -> Callable[[Received], Reply]:
    """A model whose thoughts count against maxOutputTokens: past the cap, no text at all."""

    def reply(request: Received) -> Reply:
        config = request.body["generationConfig"]
        thoughts = _thoughts(config)
        if thoughts >= config["maxOutputTokens"]:
            return gemini_content(None, thoughts_tokens=config["maxOutputTokens"],
                                  finish_reason="MAX_TOKENS")  # fmt: skip
        return gemini_content(json.dumps(answer), thoughts_tokens=thoughts)

    return reply


@pytest.mark.parametrize(
    "model",
    ["gemini-3-flash-preview", "gemini-3-pro-preview", "gemini-2.5-flash", "gemini-2.5-pro"],
)
async def test_a_thinking_model_answers_the_restatement_question_within_its_tight_cap(
    server: FakeProviderServer, provider: GeminiProvider, model: str
) -> None:
    """The defaults think by default: sent same_fact's cap of 24 tokens and left to think, they
    thought through it and answered nothing (MalformedOutputError, MAX_TOKENS)."""
    server.script(_thinking_model({"same": True}))
    pair = SameFactInput(stored="Alice lives in Paris", new="Alice lives in Paris, France")
    request = LLMRequest.of(pair, model=model)
    assert request.max_output_tokens < 512

    result = await provider.generate_structured(request, SameFact)

    assert result.value.same is True


@pytest.mark.parametrize(
    ("model", "thinking", "allowance"),
    [
        ("gemini-3-flash-preview", {"thinking_level": "MINIMAL"}, THINKING_ALLOWANCE),
        ("gemini-3.1-flash-lite-preview", {"thinking_level": "MINIMAL"}, THINKING_ALLOWANCE),
        ("gemini-3-pro-preview", {"thinking_level": "LOW"}, THINKING_ALLOWANCE),
        ("gemini-2.5-flash", {"thinking_budget": 0}, 0),
        ("models/gemini-2.5-flash-lite", {"thinking_budget": 0}, 0),
        ("gemini-2.5-pro", {"thinking_budget": 128}, THINKING_ALLOWANCE),
        ("gemini-2.0-flash", None, 0),  # a 400 "thinking is not supported by this model"
        ("gemma-3-27b-it", None, 0),
        # An alias of no version: the lowest level its family name suggests, room to think.
        ("gemini-flash-latest", {"thinking_level": "MINIMAL"}, THINKING_ALLOWANCE),
        ("gemini-pro-latest", {"thinking_level": "LOW"}, THINKING_ALLOWANCE),
        ("models/gemini-exp-1206", {"thinking_level": "LOW"}, THINKING_ALLOWANCE),
    ],
)
async def test_each_model_is_asked_to_think_as_little_as_it_can(
    server: FakeProviderServer,
    provider: GeminiProvider,
    model: str,
    thinking: dict[str, Any] | None,
    allowance: int,
) -> None:
    server.script(gemini_content('{"same": false}'))
    request = LLMRequest.of(SameFactInput(stored="a", new="b"), model=model)

    await provider.generate_structured(request, SameFact)

    [sent] = server.requests
    config = sent.body["generationConfig"]
    assert _thinking(config) == thinking
    assert config["maxOutputTokens"] == request.max_output_tokens + allowance


@pytest.mark.parametrize("model", ["gemini-flash-latest", "gemini-pro-latest"])
async def test_a_latest_alias_answers_the_restatement_question_within_its_tight_cap(
    server: FakeProviderServer, provider: GeminiProvider, model: str
) -> None:
    """An alias is today's thinking model: left at its default thinking, same_fact's cap of 24
    tokens was spent thinking and the answer was empty (MalformedOutputError, MAX_TOKENS)."""
    server.script(_thinking_model({"same": True}))
    pair = SameFactInput(stored="Alice lives in Paris", new="Alice lives in Paris, France")

    result = await provider.generate_structured(LLMRequest.of(pair, model=model), SameFact)

    assert result.value.same is True


async def test_an_alias_that_rejects_the_thinking_level_keeps_the_room_to_think(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    """An alias of a 2.5 model takes no thinking level: asked again without one, still given the
    allowance, since it may think at its default."""
    rejected = google_error(400, "Thinking level is not supported for this model.")
    server.script(rejected, gemini_content('{"same": true}'))
    request = LLMRequest.of(SameFactInput(stored="a", new="b"), model="gemini-flash-latest")

    result = await provider.generate_structured(request, SameFact)

    assert result.value.same is True
    configs = [r.body["generationConfig"] for r in server.requests]
    assert [_thinking(c) for c in configs] == [{"thinking_level": "MINIMAL"}, None]
    assert configs[1]["maxOutputTokens"] == request.max_output_tokens + THINKING_ALLOWANCE


async def test_a_model_that_rejects_the_thinking_config_is_asked_without_it(
    server: FakeProviderServer, provider: GeminiProvider
) -> None:
    """Asked once more without it, and from then on: no run fails on a model that takes none."""
    rejected = google_error(400, "Unable to submit request because thinking is not supported")
    server.script(rejected, gemini_content('{"same": true}'), gemini_content('{"same": false}'))
    request = LLMRequest.of(SameFactInput(stored="a", new="b"), model="gemini-2.5-flash-image")

    first = await provider.generate_structured(request, SameFact)
    second = await provider.generate_structured(request, SameFact)

    assert (first.value.same, second.value.same) == (True, False)
    sent = [_thinking(r.body["generationConfig"]) for r in server.requests]
    assert sent == [{"thinking_budget": 0}, None, None]
