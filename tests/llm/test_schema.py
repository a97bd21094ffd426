"""The schema a server enforces: strict, a speaker can only be one of the window's speaker ids
(a real 1.5B model wrote "Alice" for "alice" and its user facts were dropped as nobody's), and a
decision can only name one of its new fact's own candidates."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator

from memory.llm.base import LLMRequest
from memory.llm.openai_provider import OpenAIProvider, ServerOptions
from memory.models import AgentConfig
from memory.prompts import ExtractFactsInput, PromptMessage
from memory.prompts.decide_facts import (
    DecideFactsInput,
    ExistingFactShown,
    FactDecisions,
    NewFactShown,
)
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


def _decide_input() -> DecideFactsInput:
    """Two new facts: 0 has stored facts 0 and 1 as candidates, 2 only stored fact 1."""
    return DecideFactsInput(
        new_facts=[
            NewFactShown(index=0, content="Alice lives in Berlin", scope="user"),
            NewFactShown(index=2, content="Alice's cat is called Tom", scope="user"),
        ],
        existing=[
            ExistingFactShown(index=0, content="Alice lives in Paris", candidate_for=(0,)),
            ExistingFactShown(index=1, content="Alice has a cat", candidate_for=(0, 2)),
        ],
        max_words=30,
    )


async def _sent_schema(
    name: Literal["openai", "openai_compatible"], narrow: bool = True
) -> dict[str, Any]:
    answer = {"decisions": [_d(0, "ADD", None), _d(2, "ADD", None)]}
    with FakeProviderServer() as server:
        server.script(openai_chat(json.dumps(answer)))
        options = ServerOptions(narrow_decisions=narrow)
        llm = OpenAIProvider(
            api_key=None, base_url=server.openai_base_url, name=name, options=options
        )
        request = LLMRequest.of(_decide_input(), model="m")
        await llm.generate_structured(request, FactDecisions)
        await llm.close()
    [sent] = server.requests
    schema: dict[str, Any] = sent.body["response_format"]["json_schema"]["schema"]
    return schema


def _d(new: int, event: str, existing: int | None, text: str | None = None) -> dict[str, Any]:
    return {"new_fact_index": new, "event": event, "existing_index": existing, "merged_text": text}


async def test_a_compatible_server_decides_each_new_fact_once_in_order() -> None:
    """The 1.5B model decided a new fact it was not asked about, or one twice: each such answer
    cost a hotter retry, and a formation degraded when the retries did the same. A grammar built
    from the narrowed schema cannot write them, nor an index no shown fact has. Null and a shown
    fact that is not the new fact's candidate stay possible: the pipeline keeps that new fact
    (tests/pipeline/test_validation.py), and a grammar that forced a candidate made the model
    name a wrong one (memory/llm/decision_schema.py)."""
    validator = Draft202012Validator(await _sent_schema("openai_compatible"))
    valid = [
        [_d(0, "ADD", None), _d(2, "ADD", None)],
        [_d(0, "UPDATE", 0, "Alice moved to Berlin"), _d(2, "UPDATE", 1)],
        [_d(0, "NONE", 1), _d(2, "DELETE", 1)],
        [_d(0, "UPDATE", None), _d(2, "ADD", None)],
        [_d(0, "ADD", None), _d(2, "UPDATE", 0)],
    ]
    for decisions in valid:
        assert validator.is_valid({"decisions": decisions}), decisions
    invalid = {
        "an index no fact has": [_d(0, "UPDATE", 5), _d(2, "ADD", None)],
        "a new fact not asked about": [_d(0, "ADD", None), _d(1, "ADD", None)],
        "a new fact undecided": [_d(0, "ADD", None)],
        "a new fact decided twice": [_d(0, "ADD", None), _d(0, "ADD", None)],
        "out of order": [_d(2, "ADD", None), _d(0, "ADD", None)],
        "one decision too many": [_d(0, "ADD", None), _d(2, "ADD", None), _d(2, "ADD", None)],
        "an event there is not": [_d(0, "MERGE", 0), _d(2, "ADD", None)],
    }
    for what, decisions in invalid.items():
        assert not validator.is_valid({"decisions": decisions}), what


@pytest.mark.parametrize(
    ("name", "narrow"),
    [("openai", True), ("openai_compatible", False)],
    ids=["hosted-openai", "narrowing-off"],
)
async def test_the_shared_decision_schema_where_not_narrowed(
    name: Literal["openai", "openai_compatible"], narrow: bool
) -> None:
    """prefixItems is not in hosted OpenAI's strict subset, and a compatible server's grammar
    engine may reject it (MNEMOS_MODELS__NARROW_DECISIONS=false): the checks after parsing stay."""
    schema = await _sent_schema(name, narrow)
    assert schema["properties"]["decisions"]["items"] == {"$ref": "#/$defs/FactDecision"}
    assert "prefixItems" not in json.dumps(schema)
