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


def _cut_at(text: str, piece: int) -> int | None:
    """How many characters had streamed when the answer was cut as a loop (None: never)."""
    detector = LoopDetector()
    for i in range(0, len(text), piece):
        if detector.feed(text[i : i + piece]):
            return i + piece
    return None


def test_a_repeated_sentence_is_a_loop_soon_after_its_third_copy() -> None:
    cut = _cut_at(LOOP, 5)
    assert cut is not None and cut < len(LOOP) // 10  # at about the third copy, not at the end


def _pretty_facts(contents: list[str], source: int = 3) -> str:
    """Facts as the 1.5B model writes them: pretty-printed, a word to a line."""
    facts = [
        {"content": c, "scope": "user", "speaker": "jon", "sources": [source]} for c in contents
    ]
    return json.dumps({"facts": facts}, indent=2)


def test_facts_of_one_message_about_one_person_are_no_loop() -> None:
    """The glue between two pretty-printed items ("scope": "user", "speaker": "jon", "sources":
    [ 3 ] }, { "content": "Jon) is a dozen words, so, counted, three facts of message 3 that
    began with "Jon" repeated a 12-word span: cut as a loop, though nothing was said twice."""
    said = [
        "Jon lost his job as a banker in January 2023.",
        "Jon is starting a dance studio.",
        "Jon is passionate about dancing.",
        "Jon is looking for the right flooring.",
        "Jon wants to share dancing with others.",
    ]
    assert not _feed(_pretty_facts(said)).looping


def test_a_fact_written_again_and_again_is_a_loop() -> None:
    looped = _pretty_facts(["Jon is passionate about dancing and teaching others."] * 12)
    cut = _cut_at(looped, 7)
    assert cut is not None and cut < len(looped) // 2  # by the fourth copy of twelve


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
