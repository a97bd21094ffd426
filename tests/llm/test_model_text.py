"""A NUL in a model's answer (JSON's ``"\\u0000"``, valid JSON every parser accepts) is left out of
its texts by the output schema, whichever provider parsed it: the real OpenAI and Gemini SDKs
against a local server speaking their API. Kept, PostgreSQL refuses the text at every commit
(tests/store/test_contract_model_text.py forms such answers on every backend)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from memory.llm.base import LLMRequest
from memory.llm.gemini_provider import GeminiProvider
from memory.llm.openai_provider import OpenAIProvider
from memory.prompts.consolidate import ConsolidatedSections
from memory.prompts.decide_facts import FactDecisions
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from tests.fake_provider_server import FakeProviderServer, Reply, gemini_content, openai_chat
from tests.fakes import FACTS_INPUT

REQUEST = LLMRequest(
    task_input=FACTS_INPUT,
    model="test-model",
    system="You extract facts.",
    prompt="Alice: my favourite tea is oolong.",
    temperature=0.0,
    max_output_tokens=256,
)
NUL, SURROGATE = "\x00", "\ud800"


def bodies(bad: str) -> list[dict[str, object]]:
    """An answer of each task with ``bad`` in every text it stores."""
    return [
        {"facts": [{"content": f"Alice's tea is oolong{bad}", "scope": "user", "speaker": f"alice{bad}"}]},
        {
            "agent_reflections": [],
            "user_reflections": [{"content": f"Alice{bad} enjoys tea", "speaker": "alice"}],
            "session_reflections": [],
        },
        {
            "decisions": [
                {"new_fact_index": 0, "event": "UPDATE", "existing_index": 0, "merged_text": f"{bad}Tea"}
            ]
        },
        {"sections": [{"title": f"TEA{bad}", "items": [f"Likes{bad} oolong"]}]},
    ]  # fmt: skip


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture(params=["openai", "gemini"])
async def provider(
    request: pytest.FixtureRequest, server: FakeProviderServer
) -> AsyncIterator[OpenAIProvider | GeminiProvider]:
    llm: OpenAIProvider | GeminiProvider
    if request.param == "openai":
        llm = OpenAIProvider(api_key="sk-test-0123456789", base_url=server.openai_base_url)
    else:
        llm = GeminiProvider(api_key="AIzaSyTest0123456789", base_url=server.url)
    yield llm
    await llm.close()


def answer(provider: OpenAIProvider | GeminiProvider, body: object) -> Reply:
    """The provider's reply holding ``body`` as its JSON text (``json.dumps`` writes "\\u0000"
    and "\\ud800": valid JSON escapes, though pydantic's parser refuses the lone surrogate)."""
    text = json.dumps(body)
    assert "\\u0000" in text or "\\ud800" in text
    return openai_chat(text) if isinstance(provider, OpenAIProvider) else gemini_content(text)


@pytest.mark.parametrize("bad", [NUL, SURROGATE], ids=["nul", "surrogate"])
async def test_every_text_of_every_answer_is_parsed_without_its_nul(
    server: FakeProviderServer, provider: OpenAIProvider | GeminiProvider, bad: str
) -> None:
    server.script(*(answer(provider, body) for body in bodies(bad)))

    facts = (await provider.generate_structured(REQUEST, ExtractedFacts)).value
    reflections = (await provider.generate_structured(REQUEST, ExtractedReflections)).value
    decisions = (await provider.generate_structured(REQUEST, FactDecisions)).value
    sections = (await provider.generate_structured(REQUEST, ConsolidatedSections)).value

    [fact] = facts.facts
    assert (fact.content, fact.speaker) == ("Alice's tea is oolong", "alice")
    assert [r.content for r in reflections.user_reflections] == ["Alice enjoys tea"]
    assert [d.merged_text for d in decisions.decisions] == ["Tea"]
    assert [(s.title, s.items) for s in sections.sections] == [("TEA", ["Likes oolong"])]
