"""A looping answer is seen while it streams and cut; list items that share their JSON keys, and
a sentence said twice, are no loop."""

from __future__ import annotations

import json

import pytest

from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.openai_provider import OpenAIProvider
from memory.llm.repetition import LoopDetector
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from tests.fake_provider_server import FakeProviderServer, openai_chat
from tests.fakes import CONSOLIDATE_INPUT

LOOP = "The team prefers short status updates and weekly demos on Fridays. " * 40
FACTS = json.dumps(
    {
        "facts": [
            {"content": f"Alice's colleague number {i} works in team {i}.", "scope": "user",
             "speaker": "alice"}
            for i in range(40)
        ]
    },
    indent=2,
)  # fmt: skip


def _feed(text: str, piece: int = 7) -> LoopDetector:
    detector = LoopDetector()
    for i in range(0, len(text), piece):
        if detector.feed(text[i : i + piece]):
            break
    return detector


def test_a_repeated_sentence_is_a_loop_soon_after_its_third_copy() -> None:
    detector = LoopDetector()
    seen = 0
    for i in range(0, len(LOOP), 5):
        seen = i + 5
        if detector.feed(LOOP[i : i + 5]):
            break
    assert detector.looping
    assert seen < len(LOOP) // 10  # cut at about the third copy, not at the end


def test_distinct_list_items_with_shared_keys_and_a_restated_sentence_are_no_loop() -> None:
    assert not _feed(FACTS).looping
    items = ["Budget is $65,000.", "Budget is $65,000.", "Deadline Jan 20."]
    twice = json.dumps({"sections": [{"title": "PROJECTS", "items": items}]})
    assert not _feed(twice).looping


async def test_the_provider_hangs_up_on_a_looping_answer_and_raises_malformed_output() -> None:
    assert isinstance(CONSOLIDATE_INPUT, ConsolidateInput)
    request = LLMRequest.of(CONSOLIDATE_INPUT, model="m")
    with FakeProviderServer() as server:
        looping = '{"sections": [{"title": "TEAM", "items": ["' + LOOP
        server.script(openai_chat(looping, finish_reason="length"))
        llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        with pytest.raises(MalformedOutputError) as caught:
            await llm.generate_structured(request, ConsolidatedSections)
        await llm.close()
    assert "repeats itself" in str(caught.value)
    assert caught.value.content is not None
    assert len(caught.value.content) < len(LOOP) // 5  # what arrived before the hang-up
