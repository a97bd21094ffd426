"""A looping answer is seen while it streams and cut; list items that share their JSON keys, and
a sentence said twice, are no loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.openai_provider import OpenAIProvider
from memory.llm.repetition import LoopDetector
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.prompts.extract_facts import ExtractedFacts
from tests.fake_provider_server import FakeProviderServer, openai_chat
from tests.fakes import CONSOLIDATE_INPUT, FACTS_INPUT
from tests.realmodel.replay import find_data

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


def _facts(contents: list[str], speaker: str, indent: int | None = None) -> str:
    """Facts as a model writes them, each with its scope and speaker."""
    facts = [{"content": c, "scope": "user", "speaker": speaker, "sources": [1]} for c in contents]
    return json.dumps({"facts": facts}, indent=indent)


# Three things one message says alike ("I take metformin 500 mg, lisinopril 10 mg and atorvastatin
# 20 mg every morning with breakfast before I leave for work"): three distinct facts, one tail.
ALIKE = {
    "medications": [
        f"Bea takes {drug} every morning with breakfast before she leaves for work"
        for drug in ("metformin 500 mg", "lisinopril 10 mg", "atorvastatin 20 mg")
    ],
    "lessons": [
        f"Bea's {child} has swimming lessons every Tuesday at the community pool after school"
        for child in ("son Tom", "daughter Mia", "nephew Leo")
    ],
    "meetings": [
        f"Bea has a {meeting} every Monday at 9 am in the main conference room"
        for meeting in ("team standup", "budget review", "hiring sync")
    ],
}


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "pretty"])
@pytest.mark.parametrize("said", ALIKE.values(), ids=ALIKE.keys())
def test_three_distinct_facts_that_end_alike_are_no_loop(
    said: list[str], indent: int | None
) -> None:
    """Counted across the facts, the shared tail and the values between them ("user", "bea")
    made a 12-word span three times: the answer was cut twice and the message passed over."""
    answer = _facts([*said, "Bea lives in Leeds with her husband and two children"], "bea", indent)
    assert not _feed(answer).looping


@pytest.mark.parametrize("indent", [None, 2], ids=["compact", "pretty"])
def test_four_distinct_facts_that_share_a_dozen_words_are_no_loop(indent: int | None) -> None:
    """Counted across values, the fourth fact holding the shared clause (12 words) was cut as a
    loop, the answer asked again hotter and, written alike again, its message passed over."""
    tail = "every morning with breakfast before she leaves for work at the office."
    drugs = ("metformin", "lisinopril", "atorvastatin", "aspirin")
    assert not _feed(_facts([f"Bea takes {drug} {tail}" for drug in drugs], "bea", indent)).looping


# A sentence going round in a script written without spaces: split on whitespace only, the value
# was one growing word and ran to the token cap.
SPACELESS_LOOPS = {
    "chinese": "小明每天早上在公园跑步然后去咖啡店喝一杯咖啡再去上班。",
    "japanese": "ベアは毎朝朝食と一緒に薬を飲んでから会社へ出かけます。",
    "thai": "เบียทานยาทุกเช้าพร้อมอาหารเช้าก่อนออกไปทำงานที่สำนักงาน",
}


@pytest.mark.parametrize("sentence", SPACELESS_LOOPS.values(), ids=SPACELESS_LOOPS.keys())
def test_a_value_going_round_in_a_script_without_spaces_is_cut_at_its_third_copy(
    sentence: str,
) -> None:
    answer = json.dumps(
        {"facts": [{"content": sentence * 40, "scope": "user", "speaker": "bea"}]},
        ensure_ascii=False,
    )
    cut = _cut_at(answer, 3)
    assert cut is not None and cut < answer.index(sentence) + len(sentence) * 3 + 12


def test_distinct_facts_in_a_script_without_spaces_are_no_loop() -> None:
    said = [
        "小明每天早上在公园跑步。",
        "小明喜欢在咖啡店喝咖啡。",
        "小明的妹妹在北京的一所大学学习医学。",
        "小明计划明年夏天和家人一起去日本旅行。",
    ]
    facts = [{"content": c, "scope": "user", "speaker": "xiaoming"} for c in said]
    assert not _feed(json.dumps({"facts": facts}, ensure_ascii=False)).looping


async def test_the_provider_reads_three_facts_that_end_alike_whole() -> None:
    request = LLMRequest.of(FACTS_INPUT, model="m")
    with FakeProviderServer() as server:
        server.script(openai_chat(_facts(ALIKE["medications"], "bea")))
        llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)
        try:
            result = await llm.generate_structured(request, ExtractedFacts)
        finally:
            await llm.close()
    assert [f.content for f in result.value.facts] == ALIKE["medications"]


# The 1.5B model's loops on LoCoMo conv-30 (2026-11-26, docs/local_models.md), as it streamed
# them: the same fact again with other sources, between other facts.
_STUDIO = "Jon shared a photo of a group of young girls in a dance studio."
_FAVOURITE = "Gina asked Jon about his favorite part of running his own studio."
_STORE = "Gina's online clothing store has been a roller coaster but rewarding."
_COURAGE = "Starting a business takes courage - you hang in there too!"
RECORDED_LOOPS = {
    "studio": [("Jon is passionate about dancing.", "agent"), (_STUDIO, "user"),
               (_FAVOURITE, "agent"), (_STUDIO, "user"), (_FAVOURITE, "agent"), (_STUDIO, "user"),
               (_FAVOURITE, "agent"), (_STUDIO, "user")],
    "store": [(_STORE, "user"), (_COURAGE, "agent"), (_STORE, "user"), (_STORE, "user"),
              (_COURAGE, "agent"), (_STORE, "user")],
}  # fmt: skip


def _looped(said: list[tuple[str, str]]) -> str:
    """The facts pretty-printed as the model wrote them, each copy with other sources."""
    facts = [
        {"content": content, "scope": scope, "speaker": None, "sources": [i + 1]}
        for i, (content, scope) in enumerate(said)
    ]
    return json.dumps({"facts": facts}, indent=4)


def _end_of_copy(text: str, content: str, copy: int) -> int:
    """Where the object holding the ``copy``-th copy of ``content`` ends."""
    at = -1
    for _ in range(copy):
        at = text.index(content, at + 1)
    return text.index("}", at) + 1


@pytest.mark.parametrize("said", RECORDED_LOOPS.values(), ids=RECORDED_LOOPS.keys())
def test_the_small_models_recorded_loops_are_cut_at_the_third_copy(
    said: list[tuple[str, str]],
) -> None:
    looped = _looped(said)
    cut = _cut_at(looped, 5)
    assert cut is not None and cut <= _end_of_copy(looped, said[-1][0], 3) + 5


def test_a_fact_said_again_with_a_word_more_each_time_is_cut_at_its_fourth_copy() -> None:
    """The model went on: "... in a dance studio again.", "... yet again.", "... once more.":
    no copy whole, but the same dozen words in a fourth value."""
    said = [
        (_STUDIO[:-1] + more + ".", "agent") for more in ("", " again", " yet again", " once more")
    ]
    between = [
        (f"Gina sold {n} dresses this week.", "user") for n in ("two", "five", "nine", "ten")
    ]
    looped = _looped([item for pair in zip(said, between, strict=True) for item in pair])
    cut = _cut_at(looped, 5)
    assert cut is not None
    assert looped.index(said[3][0]) < cut <= looped.index(said[3][0]) + len(said[3][0])


def _real_answers() -> list[tuple[str, str]]:
    """(finish_reason, content) of every answer of the real 1.5B model kept: committed with the
    tests, and ../shared's when it is there (tests/realmodel/replay.py)."""
    paths = sorted((Path(__file__).parents[1] / "realmodel" / "data").glob("*.jsonl"))
    paths += [shared] if (shared := find_data()) is not None else []
    lines = [line for path in paths for line in path.read_text().splitlines() if line.strip()]
    return [(d["finish_reason"], d["content"]) for d in map(json.loads, lines)]


def test_the_real_small_models_answers_are_cut_only_when_they_ran_to_the_cap() -> None:
    """Every answer it finished is read whole; every one it ended at its token cap (a dedup
    decision repeating two sentences inside one merged text) is cut early."""
    answers = _real_answers()
    assert len(answers) >= 40
    for finish, content in answers:
        cut = _cut_at(content, 9)
        if finish == "stop":
            assert cut is None, content
        else:
            assert cut is not None and cut < len(content) // 2, content
