"""The schema a server enforces: strict, and a speaker can only be one of the window's speaker ids
(a real 1.5B model wrote "Alice" for "alice" and its user facts were dropped as nobody's)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.llm.base import LLMRequest
from memory.llm.openai_provider import OpenAIProvider
from memory.models import AgentConfig
from memory.prompts import ExtractFactsInput, PromptMessage
from memory.prompts.extract_facts import ExtractedFacts
from tests.fake_provider_server import FakeProviderServer, openai_chat

SAID = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def _message(n: int, user_id: str | None) -> PromptMessage:
    role = "user" if user_id else "agent"
    return PromptMessage(seq=n, role=role, name="X", content="hi", created_at=SAID, user_id=user_id)


async def test_the_speaker_is_an_enum_of_the_windows_speaker_ids() -> None:
    task = ExtractFactsInput(
        agent=AgentConfig(agent_id="eve", name="Eve"),
        messages=[
            _message(1, "alice"),
            _message(2, None),
            _message(3, "bob"),
            _message(4, "alice"),
        ],
        max_words=30,
    )
    with FakeProviderServer() as server:
        server.script(openai_chat('{"facts": []}'))
        llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        await llm.generate_structured(LLMRequest.of(task, model="m"), ExtractedFacts)
        await llm.close()
    [sent] = server.requests
    schema = sent.body["response_format"]["json_schema"]["schema"]
    item = schema["$defs"]["ExtractedFact"]
    assert item["properties"]["speaker"] == {
        "anyOf": [{"type": "string", "enum": ["alice", "bob"]}, {"type": "null"}]
    }
    assert item["additionalProperties"] is False
    assert sorted(item["required"]) == sorted(item["properties"])
