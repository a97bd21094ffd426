"""A server that refuses a request longer than its model's context (OpenAI, llama.cpp, vLLM,
Gemini, a 413 on the way): the provider says so (memory/llm/errors.py ContextExceededError), a
window too large in the domain's terms, on which the workflow splits the window or takes the
step's fallback (activities/errors.py), instead of a ProviderError that no retry changes and that
fails the run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from activities.errors import SPLITS_WINDOW, UNUSABLE_OUTPUT, classified
from memory.errors import ProviderError, WindowTooLargeError
from memory.llm.base import LLMRequest
from memory.llm.gemini_provider import GeminiProvider
from memory.llm.openai_provider import OpenAIProvider
from memory.prompts.extract_facts import ExtractedFacts
from tests.context_refusals import (
    GEMINI_MESSAGE,
    LLAMA_CPP,
    OPENAI,
    PAYLOAD_TOO_LARGE,
    VLLM,
    refusal,
)
from tests.fake_provider_server import (
    FakeProviderServer,
    Reply,
    as_stream,
    google_error,
    openai_chat,
    openai_error,
)
from tests.fakes import FACTS_INPUT

REQUEST = LLMRequest.of(FACTS_INPUT, model="m")


async def _openai_failure(reply: Reply) -> ProviderError:
    with FakeProviderServer() as server:
        server.script(reply)
        provider = OpenAIProvider(api_key=None, base_url=server.openai_base_url, timeout=10)
        try:
            with pytest.raises(ProviderError) as caught:
                await provider.generate_structured(REQUEST, ExtractedFacts)
        finally:
            await provider.close()
    return caught.value


def _is_context_refusal(err: ProviderError) -> None:
    assert isinstance(err, WindowTooLargeError), f"{type(err).__name__}: {err}"
    assert not err.retryable
    with pytest.raises(Exception) as caught, classified():
        raise err
    app: Any = caught.value
    # What the workflow splits an extraction's window on, and takes a step's fallback on.
    assert app.type in SPLITS_WINDOW and app.type in UNUSABLE_OUTPUT and app.non_retryable


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, OPENAI), (400, LLAMA_CPP), (400, VLLM), (413, PAYLOAD_TOO_LARGE)],
    ids=["openai", "llama.cpp", "vllm", "413"],
)
async def test_a_servers_refusal_of_a_request_over_its_context_is_a_window_too_large(
    status: int, body: dict[str, Any]
) -> None:
    err = await _openai_failure(Reply(status=status, body=body))
    _is_context_refusal(err)
    assert err.status == status and "exceeds the model's context" in str(err)


async def test_geminis_refusal_of_an_input_over_its_context_is_a_window_too_large() -> None:
    with FakeProviderServer() as server:
        server.script(google_error(400, GEMINI_MESSAGE))
        provider = GeminiProvider(api_key="AIza-test", timeout=10, base_url=server.url)
        try:
            with pytest.raises(ProviderError) as caught:
                await provider.generate_structured(REQUEST, ExtractedFacts)
        finally:
            await provider.close()
    _is_context_refusal(caught.value)


async def test_a_context_refusal_sent_as_an_error_event_is_a_window_too_large() -> None:
    """A server that refuses only after its stream began (older llama.cpp builds): an SSE error
    event, which the SDK raises as a plain APIError."""
    events = as_stream(openai_chat('{"facts": []}').body).decode().split("\n\n")
    body = events[0] + f"\n\ndata: {json.dumps(LLAMA_CPP)}\n\n"
    err = await _openai_failure(Reply(body=body.encode(), content_type="text/event-stream"))
    _is_context_refusal(err)


async def test_another_bad_request_stays_a_provider_error_that_fails_the_step() -> None:
    """Only a refusal that names the context: a bad request splitting cannot fix still fails."""
    err = await _openai_failure(openai_error(400, "Invalid value for 'temperature'"))
    assert type(err) is ProviderError and not err.retryable


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, OPENAI), (400, LLAMA_CPP), (400, VLLM), (413, PAYLOAD_TOO_LARGE)],
    ids=["openai", "llama.cpp", "vllm", "413"],
)
def test_the_refusal_the_workflow_tests_raise_is_the_providers(
    status: int, body: dict[str, Any]
) -> None:
    _is_context_refusal(refusal(status, body))
