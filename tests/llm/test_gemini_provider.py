"""GeminiProvider against a local server that speaks the Gemini API: the real SDK, no patching."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from memory.errors import InputRefusedError, MalformedOutputError, ProviderError
from memory.llm.base import LLMRequest, Usage
from memory.llm.gemini_provider import GeminiProvider
from memory.prompts.consolidate import ConsolidatedSections, blob_text
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.prompts.same_fact import SameFact, SameFactInput
from tests.fake_provider_server import FakeProviderServer, Reply, gemini_content, google_error
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
    assert config["maxOutputTokens"] == 512
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
