"""What real servers answer to a request longer than their model's context (HTTP 400 or 413),
as each says it, and the error the provider layer makes of it: for tests of the provider and of
the workflows that split, or fall back, on it (memory/llm/errors.py ContextExceededError)."""

from __future__ import annotations

from typing import Any

import httpx2
import openai

from memory.errors import ProviderError
from memory.llm.errors import to_provider_error

# The body each server sends (status 400 unless said), captured from their documentation/source.
OPENAI: dict[str, Any] = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
LLAMA_CPP: dict[str, Any] = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 9000,
        "n_ctx": 8192,
    }
}
VLLM: dict[str, Any] = {
    "object": "error",
    "message": "This model's maximum context length is 8192 tokens. However, you requested "
    "9000 tokens (8000 in the messages, 1000 in the completion). Please reduce the length of "
    "the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
PAYLOAD_TOO_LARGE: dict[str, Any] = {"error": {"message": "Request Entity Too Large"}}
GEMINI_MESSAGE = (
    "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
)


def refusal(status: int = 400, body: dict[str, Any] = LLAMA_CPP) -> ProviderError:
    """The error OpenAIProvider raises when a server refuses a prompt over its context with
    ``status`` and ``body``: the SDK's exception for that answer (built as the SDK builds it),
    mapped as the provider maps it (provider_errors)."""
    request = httpx2.Request("POST", "http://127.0.0.1:8080/v1/chat/completions")
    response = httpx2.Response(status, request=request)
    error = body.get("error", body)
    message = f"Error code: {status} - {error.get('message')}"
    sdk: openai.APIStatusError
    if status == 400:
        sdk = openai.BadRequestError(message, response=response, body=error)
    else:
        sdk = openai.APIStatusError(message, response=response, body=error)
    mapped = to_provider_error(sdk, provider="openai_compatible")
    assert mapped is not None
    return mapped
