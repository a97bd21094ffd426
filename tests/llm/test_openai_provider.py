"""OpenAIProvider against a local server that speaks the OpenAI API: the real SDK, no patching."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest

from memory.errors import InputRefusedError, MalformedOutputError, ProviderError
from memory.llm.base import LLMRequest, Usage
from memory.llm.openai_provider import OpenAIProvider
from memory.prompts.consolidate import (
    MAX_ITEM_CHARS,
    MAX_ITEMS_PER_SECTION,
    MAX_SECTIONS,
    ConsolidatedSections,
    blob_text,
)
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from tests.fake_provider_server import (
    FakeProviderServer,
    Reply,
    as_stream,
    openai_chat,
    openai_error,
)
from tests.fakes import CONSOLIDATE_INPUT, FACTS_INPUT

API_KEY = "sk-test-0123456789abcdefghij"
REQUEST = LLMRequest(
    task_input=FACTS_INPUT,
    model="gpt-4.1-mini",
    system="You extract facts.",
    prompt="Alice: I live in Paris.",
    temperature=0.0,
    max_output_tokens=256,
)
FACTS = {"facts": [{"content": "Alice lives in Paris", "scope": "user"}]}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
async def provider(server: FakeProviderServer) -> AsyncIterator[OpenAIProvider]:
    llm = OpenAIProvider(api_key=API_KEY, base_url=server.openai_base_url, timeout=10)
    yield llm
    await llm.close()


async def failure(provider: OpenAIProvider) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await provider.generate_structured(REQUEST, ExtractedFacts)
    return caught.value


async def test_structured_output_is_validated_and_usage_comes_from_the_response(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(
        openai_chat(
            json.dumps(FACTS),
            model="gpt-4.1-mini-2025-04-14",
            prompt_tokens=42,
            completion_tokens=9,
        )
    )

    result = await provider.generate_structured(REQUEST, ExtractedFacts)

    assert result.value == ExtractedFacts(
        facts=[ExtractedFact(content="Alice lives in Paris", scope="user")]
    )
    timing = {"seconds", "first_token_seconds"}
    assert result.usage.model_dump(exclude=timing) == Usage(
        provider="openai_compatible",
        model="gpt-4.1-mini-2025-04-14",
        input_tokens=42,
        output_tokens=9,
    ).model_dump(exclude=timing)
    assert result.usage.seconds is not None and result.usage.first_token_seconds is not None
    assert result.raw == json.dumps(FACTS)
    [sent] = server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.body["model"] == "gpt-4.1-mini"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You extract facts."},
        {"role": "user", "content": "Alice: I live in Paris."},
    ]
    assert sent.body["temperature"] == 0.0
    assert sent.body["max_tokens"] == 256  # the name every compatible server reads
    assert sent.body["stream"] is True
    response_format = sent.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "ExtractedFacts"
    assert response_format["json_schema"]["strict"] is True
    assert response_format["json_schema"]["schema"]["additionalProperties"] is False


async def test_consolidation_asks_for_bounded_items_not_free_text(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    answer = {"sections": [{"title": "PREFERENCES", "items": ["Prefers tea"]}]}
    server.script(openai_chat(json.dumps(answer), prompt_tokens=20, completion_tokens=6))

    result = await provider.generate_structured(
        REQUEST.model_copy(update={"task_input": CONSOLIDATE_INPUT}), ConsolidatedSections
    )

    assert blob_text(result.value, 1) == "VERSION: 1\n[PREFERENCES]\n- Prefers tea"
    [sent] = server.requests
    schema = sent.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["sections"]["maxItems"] == MAX_SECTIONS
    items = schema["$defs"]["ConsolidatedSection"]["properties"]["items"]
    assert items["maxItems"] == MAX_ITEMS_PER_SECTION
    assert items["items"] == {"type": "string", "maxLength": MAX_ITEM_CHARS}


def test_name_says_whether_it_is_openai_or_a_compatible_server() -> None:
    assert OpenAIProvider(api_key=API_KEY).name == "openai"
    assert (
        OpenAIProvider(api_key=None, base_url="http://127.0.0.1:1/v1").name == "openai_compatible"
    )


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "7"}, 7.0), ({"Retry-After": "0.5"}, 0.5), ({"retry-after-ms": "1500"}, 1.5)],
)
async def test_rate_limit_is_retryable_with_the_servers_retry_after_in_seconds(
    server: FakeProviderServer,
    provider: OpenAIProvider,
    headers: dict[str, str],
    expected: float,
) -> None:
    server.script(openai_error(429, "Rate limit reached", headers))

    error = await failure(provider)

    assert (error.retryable, error.status, error.retry_after) == (True, 429, expected)
    assert len(server.requests) == 1  # no SDK retry: Temporal owns retries


async def test_retry_after_as_an_http_date(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    server.script(openai_error(429, "slow down", {"Retry-After": when}))

    error = await failure(provider)

    assert error.retryable
    assert error.retry_after is not None and 110 <= error.retry_after <= 121
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [408, 409, 500, 502, 503])
async def test_server_side_failures_are_retryable_and_sent_once(
    server: FakeProviderServer, provider: OpenAIProvider, status: int
) -> None:
    server.script(openai_error(status, "try later"))

    error = await failure(provider)

    assert (error.retryable, error.status) == (True, status)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_are_not_retryable(
    server: FakeProviderServer, provider: OpenAIProvider, status: int
) -> None:
    server.script(openai_error(status, "bad request", {"Retry-After": "3"}))

    error = await failure(provider)

    assert (error.retryable, error.status, error.retry_after) == (False, status, None)
    assert len(server.requests) == 1


async def test_a_reply_slower_than_the_timeout_is_a_retryable_timeout(
    server: FakeProviderServer,
) -> None:
    server.script(Reply(body={}, delay=30))
    provider = OpenAIProvider(api_key=API_KEY, base_url=server.openai_base_url, timeout=0.3)
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
        url = gone.openai_base_url
    provider = OpenAIProvider(api_key=API_KEY, base_url=url, timeout=5)
    try:
        error = await failure(provider)
    finally:
        await provider.close()
    assert error.retryable and error.status is None


@pytest.mark.parametrize(
    "content",
    [
        '{"facts": [{"content": "Alice lives in Paris", "scope": "user"}',  # cut-off JSON
        "Sure! Here are the facts: Alice lives in Paris.",  # not JSON at all
        '{"facts": [{"content": "Alice lives in Paris", "scope": "planet"}]}',  # fails the schema
        '{"items": []}',  # another shape
    ],
)
async def test_output_that_does_not_fit_the_schema_is_malformed(
    server: FakeProviderServer, provider: OpenAIProvider, content: str
) -> None:
    server.script(openai_chat(content, prompt_tokens=42, completion_tokens=9))

    with pytest.raises(MalformedOutputError) as caught:
        await provider.generate_structured(REQUEST, ExtractedFacts)

    assert caught.value.retryable
    assert len(server.requests) == 1
    # The unusable answer cost its tokens: the token metrics count them (memory.tracing).
    usage = caught.value.usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (42, 9)


async def test_a_stream_that_ends_mid_answer_is_a_retryable_provider_error(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    """Seen when a llama.cpp server was stopped mid-answer: the events ended after
    '{"decisions": [{"new_fact_index": 0, "' with no finish reason. The server failed, not the
    model: a plain retry, not a rejection that samples hotter."""
    whole = as_stream(openai_chat('{"facts": [{"content": "Alice likes tea"}]}').body)
    events = whole.decode().split("\n\n")
    cut = "\n\n".join(e for e in events[:3]) + "\n\n"  # two pieces of content, then nothing
    server.script(Reply(body=cut.encode(), content_type="text/event-stream"))

    with pytest.raises(ProviderError) as caught:
        await provider.generate_structured(REQUEST, ExtractedFacts)

    assert not isinstance(caught.value, MalformedOutputError)
    assert caught.value.retryable
    assert "ended before the answer" in str(caught.value)


async def test_an_error_event_mid_stream_is_a_retryable_provider_error_with_the_key_redacted(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    """OpenAI, vLLM and llama.cpp end a stream that failed after its 200 with an SSE error event;
    the SDK raises a plain openai.APIError for it, which must not escape unmapped (unredacted)."""
    whole = as_stream(openai_chat('{"facts": [{"content": "Alice likes tea"}]}').body)
    events = whole.decode().split("\n\n")
    error = {
        "error": {"message": f"overloaded (key {API_KEY})", "type": "server_error", "code": 503}
    }
    body = "\n\n".join(events[:2]) + f"\n\ndata: {json.dumps(error)}\n\n"
    server.script(Reply(body=body.encode(), content_type="text/event-stream"))

    with pytest.raises(ProviderError) as caught:
        await provider.generate_structured(REQUEST, ExtractedFacts)

    assert not isinstance(caught.value, MalformedOutputError)
    assert caught.value.retryable and caught.value.status == 503
    assert "overloaded" in str(caught.value)
    assert API_KEY not in str(caught.value) and "[redacted]" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


async def test_a_body_that_is_not_json_is_a_retryable_provider_error(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(Reply(body=b"<html>502 Bad Gateway</html>"))

    error = await failure(provider)

    assert error.retryable and not isinstance(error, MalformedOutputError)
    assert "non-JSON" in str(error)


async def test_output_cut_by_the_token_limit_is_malformed(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(
        openai_chat('{"facts": [', finish_reason="length"),
        openai_chat('{"sections": [{"title": "PRE', finish_reason="length"),
    )

    with pytest.raises(MalformedOutputError) as cut:
        await provider.generate_structured(REQUEST, ExtractedFacts)
    assert cut.value.usage is not None and cut.value.usage.output_tokens == 7
    with pytest.raises(MalformedOutputError):
        await provider.generate_structured(REQUEST, ConsolidatedSections)


async def test_a_refusal_is_not_retryable(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(openai_chat(None, refusal="I can't help with that."))

    error = await failure(provider)

    # No retry of this input helps: the workflow splits its window down to the message refused.
    assert isinstance(error, InputRefusedError) and not error.retryable
    assert "refused" in str(error)


async def test_a_refusal_keeps_the_models_words_out_of_the_error(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    """A refusal often quotes what it refuses, the user's words; the error reaches the worker's
    logs and the run's memo, where only where and why belong (errors.py ``unfit``)."""
    server.script(openai_chat(None, refusal="I can't store Bea's LEAKDIAG diagnosis or PIN 4471."))

    error = await failure(provider)

    assert isinstance(error, InputRefusedError) and "refused" in str(error)
    assert "LEAKDIAG" not in str(error) and "4471" not in str(error)


def _chunk(delta: dict[str, str], finish: str | None = None) -> dict[str, object]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [choice]}  # fmt: skip


def _events(*chunks: dict[str, object], done: bool = True) -> Reply:
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks)
    return Reply(body=(body + ("data: [DONE]\n\n" if done else "")).encode(),
                 content_type="text/event-stream")  # fmt: skip


@pytest.mark.parametrize("content", ["", '{"facts": [{"content": "Bea has'], ids=["none", "some"])
async def test_a_content_filtered_stream_is_a_refusal_of_the_input(
    server: FakeProviderServer, provider: OpenAIProvider, content: str
) -> None:
    """OpenAI and Azure end a filtered answer with finish_reason "content_filter": the input is
    refused (split down to the message, not asked again hotter), as a filtered 400 is."""
    start = _chunk({"role": "assistant", "content": content})
    server.script(_events(start, _chunk({}, "content_filter")))

    error = await failure(provider)

    assert isinstance(error, InputRefusedError) and not error.retryable
    assert "content filter" in str(error)


@pytest.mark.parametrize("done", [True, False], ids=["with-DONE", "without-DONE"])
async def test_a_stream_that_ends_before_any_content_is_a_retryable_provider_error(
    server: FakeProviderServer, provider: OpenAIProvider, done: bool
) -> None:
    """The server went away before the model said a word: a transport failure, retried as one,
    not an empty answer rejected (sampled hotter; twice: the message passed over)."""
    server.script(_events(_chunk({"role": "assistant", "content": ""}), done=done))

    error = await failure(provider)

    assert not isinstance(error, MalformedOutputError) and error.retryable
    assert "ended before the answer" in str(error)


async def test_a_content_filters_400_is_a_refusal_of_the_input_not_a_failure_of_the_call(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    """Azure OpenAI answers a filtered prompt with HTTP 400 and the code content_filter; another
    400 (a bad parameter) fails every request alike, and is no refusal of one input."""
    server.script(
        openai_error(400, "The response was filtered", code="content_filter"),
        openai_error(400, "Unsupported parameter: 'temperature'"),
    )

    refused = await failure(provider)
    bad = await failure(provider)

    assert isinstance(refused, InputRefusedError) and "filtered" in str(refused)
    assert not isinstance(bad, InputRefusedError) and not bad.retryable


async def test_empty_text_is_malformed(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(openai_chat(""))

    with pytest.raises(MalformedOutputError):
        await provider.generate_structured(REQUEST, ExtractedFacts)


async def test_the_api_key_never_appears_in_the_error(
    server: FakeProviderServer, provider: OpenAIProvider
) -> None:
    server.script(openai_error(401, f"Incorrect API key provided: {API_KEY}. Find your key at …"))

    error = await failure(provider)

    assert not error.retryable
    assert API_KEY not in str(error)
    assert "[redacted]" in str(error)
    # No chained SDK exception either: its text would carry the key into logs and histories.
    assert error.__cause__ is None and error.__suppress_context__


async def test_a_compatible_server_gets_a_connection_per_call() -> None:
    """llama.cpp's server dropped a kept-alive connection without an answer: `mnemos check-model`
    failed at its eighth call in every run, and passed with none kept (openai_provider says
    more). A server that would keep them gets a new one for each call; OpenAI's keeps its own."""
    with FakeProviderServer(keep_alive_seconds=5) as server:
        server.script(*[openai_chat(json.dumps(FACTS)) for _ in range(4)])
        compatible = OpenAIProvider(api_key=None, base_url=server.openai_base_url, timeout=10)
        hosted = OpenAIProvider(
            api_key=API_KEY, base_url=server.openai_base_url, timeout=10, name="openai"
        )
        try:
            for llm in (compatible, compatible, hosted, hosted):
                await llm.generate_structured(REQUEST, ExtractedFacts)
        finally:
            await compatible.close()
            await hosted.close()
    first, second, third, fourth = server.connections
    assert first != second  # compatible: one connection per call
    assert third == fourth  # hosted: kept alive, as the SDK does
