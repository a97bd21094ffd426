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


# vLLM (newer) when the answer's cap alone exceeds the model's context: mnemos asks extract_facts
# for 6,624 tokens (the schema's bound) when MNEMOS_MODELS__CONTEXT_TOKENS is unset.
VLLM_CAP_TOO_LARGE: dict[str, Any] = {
    "object": "error",
    "message": "'max_tokens' or 'max_completion_tokens' is too large: 6624. This model's maximum "
    "context length is 4096 tokens and your request has 180 input tokens (6624 > 4096 - 180).",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
# vLLM (older), and OpenAI of old, for the same request.
VLLM_COMPLETION_OVER: dict[str, Any] = {
    **VLLM,
    "message": "This model's maximum context length is 4096 tokens. However, you requested 6804 "
    "tokens (180 in the messages, 6624 in the completion). Please reduce the length of the "
    "messages or completion.",
}
# TGI (HTTP 422), its error a string.
TGI_CAP_TOO_LARGE: dict[str, Any] = {
    "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: "
    "180 `inputs` tokens and 6624 `max_new_tokens`",
    "error_type": "validation",
}


@pytest.mark.parametrize(
    ("status", "body"),
    [(400, VLLM_CAP_TOO_LARGE), (400, VLLM_COMPLETION_OVER), (422, TGI_CAP_TOO_LARGE)],
    ids=["vllm", "vllm-older", "tgi"],
)
async def test_an_answer_cap_alone_over_the_context_fails_the_step_naming_the_setting(
    status: int, body: dict[str, Any]
) -> None:
    """Taken for a window too large, every window was split down to single messages and each
    passed over, the run ending with only degraded counts: a small model run without
    MNEMOS_MODELS__CONTEXT_TOKENS lost every message, silently."""
    err = await _openai_failure(Reply(status=status, body=body))
    assert type(err) is ProviderError and not err.retryable, f"{type(err).__name__}: {err}"
    assert "MNEMOS_MODELS__CONTEXT_TOKENS" in str(err)
    with pytest.raises(Exception) as caught, classified():
        raise err
    app: Any = caught.value
    assert app.type not in SPLITS_WINDOW | UNUSABLE_OUTPUT and app.non_retryable


def _said(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": status}}


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (  # the newer vLLM, where a smaller input would leave the cap room
            400,
            {
                **VLLM_CAP_TOO_LARGE,
                "message": "'max_tokens' or 'max_completion_tokens' is too large: 1000. This "
                "model's maximum context length is 8192 tokens and your request has 8000 input "
                "tokens (1000 > 8192 - 8000).",
            },
        ),
        (
            422,
            {
                "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
                "8192. Given: 8000 `inputs` tokens and 1000 `max_new_tokens`",
                "error_type": "validation",
            },
        ),
        (
            422,
            {
                "error": "Input validation error: `inputs` must have less than 8192 tokens. "
                "Given: 9000",
                "error_type": "validation",
            },
        ),
        (
            400,
            _said(
                400,
                "Trying to keep the first 9000 tokens when context the overflows. However, the "
                "model is loaded with context length of only 8192 tokens, which is not enough.",
            ),
        ),
        (400, _said(400, "prompt is too long: 9000 tokens > 8192 maximum")),
    ],
    ids=["vllm-input", "tgi", "tgi-inputs", "lm-studio", "prompt-too-long"],
)
async def test_more_servers_refusals_of_an_input_over_the_context_are_a_window_too_large(
    status: int, body: dict[str, Any]
) -> None:
    err = await _openai_failure(Reply(status=status, body=body))
    _is_context_refusal(err)


async def test_a_500_naming_the_context_stays_retryable() -> None:
    """Older llama.cpp answered an over-long prompt with a 500, as any server fault: a 500 says
    nothing certain about the request, so it is retried as before."""
    err = await _openai_failure(Reply(status=500, body=_said(500, LLAMA_CPP["error"]["message"])))
    assert type(err) is ProviderError and err.retryable
