"""Bounded model output (issue #12): every output schema bounds its strings and lists, the bounds
survive the OpenAI strict-schema conversion, every step caps its output tokens to fit its schema,
and the decision prompt gives a model nothing to copy."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel

from memory.llm.base import LLMRequest, Retry
from memory.llm.gemini_provider import GeminiProvider
from memory.llm.openai_provider import OpenAIProvider
from memory.prompts.common import MAX_TEXT_CHARS
from memory.prompts.decide_facts import FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from tests.fake_provider_server import FakeProviderServer, gemini_content, openai_chat
from tests.fakes import CONSOLIDATE_INPUT, DECIDE_INPUT, FACTS_INPUT

SCHEMAS: list[type[BaseModel]] = [ExtractedFacts, FactDecisions, ExtractedReflections]


def _unbounded(node: Any, where: str = "") -> list[str]:
    """Paths of strings without maxLength (enums aside) and arrays without maxItems."""
    found: list[str] = []
    if isinstance(node, dict):
        kinds = node.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if "string" in kinds and "enum" not in node and "maxLength" not in node:
            found.append(where or "root")
        if "array" in kinds and "maxItems" not in node:
            found.append(where or "root")
        for key, value in node.items():
            found += _unbounded(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _unbounded(value, f"{where}[{i}]")
    return found


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s.__name__)
def test_every_string_and_list_is_bounded_also_in_the_strict_schema(
    schema: type[BaseModel],
) -> None:
    assert _unbounded(schema.model_json_schema()) == []
    assert _unbounded(to_strict_json_schema(schema)) == []


def test_no_decision_carries_free_text_the_pipeline_does_not_read() -> None:
    fields = FactDecisions.model_json_schema()["$defs"]["FactDecision"]["properties"]
    assert set(fields) == {"new_fact_index", "event", "existing_index", "merged_text"}


def test_each_step_caps_its_output_to_fit_its_schema() -> None:
    facts = LLMRequest.of(FACTS_INPUT, model="m")
    decide = LLMRequest.of(DECIDE_INPUT, model="m")
    consolidate = LLMRequest.of(CONSOLIDATE_INPUT, model="m")
    # One decision of at most MAX_TEXT_CHARS characters: a few hundred tokens, not 4096.
    assert MAX_TEXT_CHARS // 4 < decide.max_output_tokens <= 256
    # 300 words of blob at ~1.3 tokens a word, with room for the tolerance.
    assert 300 * 1.3 < consolidate.max_output_tokens < 1024
    assert facts.max_output_tokens > decide.max_output_tokens


def test_the_decision_prompt_shows_facts_bare_and_candidates_apart() -> None:
    prompt = LLMRequest.of(DECIDE_INPUT, model="m").prompt
    assert "0. Alice is 30\n</existing_memories>" in prompt
    assert "new fact 0: existing 0" in prompt
    assert "(candidate for" not in prompt and "final_text" not in prompt


def test_a_retry_differs_from_the_failed_request() -> None:
    first = LLMRequest.of(DECIDE_INPUT, model="m")
    second = LLMRequest.of(
        DECIDE_INPUT, model="m", retry=Retry(attempt=2, rejected="existing index 3 <not offered>")
    )
    assert second.prompt.startswith(first.prompt) and second.prompt != first.prompt
    assert "An earlier answer was rejected" in second.prompt
    assert "&lt;not offered&gt;" in second.prompt
    assert (first.temperature, second.temperature) == (0.0, 0.3)


def _sent_schema_bounds(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        found |= {k for k in node if k in ("maxLength", "maxItems", "max_length", "max_items")}
        for value in node.values():
            found |= _sent_schema_bounds(value)
    elif isinstance(node, list):
        for value in node:
            found |= _sent_schema_bounds(value)
    return found


async def test_the_bounds_and_the_cap_reach_both_providers_on_the_wire() -> None:
    request = LLMRequest.of(DECIDE_INPUT, model="m")
    with FakeProviderServer() as server:
        server.script(
            gemini_content(json.dumps({"decisions": []})), openai_chat('{"decisions": []}')
        )
        gemini = GeminiProvider(api_key="AIzaSyTest0123456789abcdefghijklmnop", base_url=server.url)
        openai = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        await gemini.generate_structured(request, FactDecisions)
        await openai.generate_structured(request, FactDecisions)
        await gemini.close()
        await openai.close()
        to_gemini, to_openai = server.requests
    config = to_gemini.body["generationConfig"]
    assert config["maxOutputTokens"] == request.max_output_tokens
    # The SDK sends Schema's proto field names (max_length, max_items, as its property_ordering),
    # which the API's proto3 JSON parsing accepts as well as the camelCase ones.
    assert {"max_length", "max_items"} <= _sent_schema_bounds(config["responseSchema"])
    assert to_openai.body["max_tokens"] == request.max_output_tokens
    strict = to_openai.body["response_format"]["json_schema"]
    assert strict["strict"] is True
    assert {"maxLength", "maxItems"} <= _sent_schema_bounds(strict["schema"])
