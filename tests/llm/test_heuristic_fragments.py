"""The offline rules make no fact of a sentence a prompt shows only part of (r249): the words of
a slice cut within a sentence (``[… mid-sentence]``, memory/transcript.py), or of a message
truncated at the budget. Read alone, "named Rex and he is 4 years old." has no "my" and
became the agent's, which every user reads."""

from __future__ import annotations

from datetime import UTC, datetime

from memory import transcript
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig
from memory.prompts import ExtractFactsInput, ExtractReflectionsInput, PromptMessage
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections

llm = HeuristicProvider()
EVE = AgentConfig(agent_id="eve", name="Eve")
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def hana(content: str) -> PromptMessage:
    return PromptMessage(
        seq=1, role="user", name="Hana", content=content, created_at=T0, user_id="hana"
    )


async def facts(content: str) -> list[tuple[str, str]]:
    inp = ExtractFactsInput(agent=EVE, messages=[hana(content)], max_words=30)
    request = LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")
    out = (await llm.generate_structured(request, ExtractedFacts)).value
    return [(f.scope, f.content) for f in out.facts]


async def test_the_words_after_a_cut_within_a_sentence_make_no_fact() -> None:
    content = "My dog is named Rex and he is 4 years old. My cat Tom is 2 years old."
    cut = content.index("Rex")
    shown = transcript.marked(content, cut, len(content))
    assert shown.startswith(f"{transcript.CUT_MID} Rex")
    assert await facts(shown) == [("user", "Hana's cat Tom is 2 years old.")]


async def test_the_words_before_a_cut_within_a_sentence_make_no_fact() -> None:
    content = "My cat Tom is 2 years old. My dog is named Rex and he is 4 years old."
    shown = transcript.marked(content, 0, content.index(" Rex"))
    assert shown.endswith(f"named {transcript.CUT_MID}")
    assert await facts(shown) == [("user", "Hana's cat Tom is 2 years old.")]


async def test_a_slice_within_one_sentence_makes_none_and_one_between_sentences_all() -> None:
    content = "Round 7 of the lamp check was fine and Building 4 passed with no issue at all."
    assert await facts(transcript.marked(content, 9, 40)) == []
    whole = "First. Round 7 of the lamp check was fine. Building 4 passed every test. Last."
    shown = transcript.marked(whole, 7, whole.index(" Last"))
    assert shown.startswith(f"{transcript.CUT} Round") and shown.endswith(f"test. {transcript.CUT}")
    # The marker is no word of the first sentence ("Round" read as a name after it).
    assert [text for _, text in await facts(shown)] == [
        "Round 7 of the lamp check was fine.",
        "Hana said: Building 4 passed every test.",
    ]


async def test_a_message_truncated_within_a_sentence_loses_only_that_sentence() -> None:
    content = "My cat Tom is 2 years old. My dog is named Rex and he is 4 years old."
    cut = transcript.shown(content, content.index(" Rex"))
    assert await facts(cut) == [("user", "Hana's cat Tom is 2 years old.")]
    at_end = transcript.shown(content, content.index(" My dog"))
    assert await facts(at_end) == [("user", "Hana's cat Tom is 2 years old.")]


async def test_no_reflection_is_made_of_a_fragment_either() -> None:
    content = "I always want short answers. Please never call me before 10am."
    shown = transcript.marked(content, content.index("call"), len(content))
    inp = ExtractReflectionsInput(
        agent=EVE,
        messages=[hana(shown)],
        scopes=("user", "session"),
        current={},
        new_facts=[],
        max_words=30,
    )
    request = LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")
    out = (await llm.generate_structured(request, ExtractedReflections)).value
    assert out.user_reflections == []


async def test_a_line_wrapped_within_a_sentence_is_read_with_it() -> None:
    """Text wrapped at a width: the two lines are one sentence, whose subject the first holds,
    so the second is never read alone as a statement about the world (the agent's)."""
    assert await facts("My dog is named\nRex and he is 4 years old.") == [
        ("user", "Hana's dog is named Rex and he is 4 years old.")
    ]
    # A statement about the work stays the agent's: a guest's, or one of a group chat, is
    # kept there, where user memory is off (r251: forced into the speaker's scope, it was lost).
    assert await facts(
        "Quick update on the plan\nThe Q3 launch of Initech moved to October 14."
    ) == [("agent", "Quick update on the plan The Q3 launch of Initech moved to October 14.")]
    # A line that ends a sentence, introduces a list, or is an item of one: as before.
    listed = "Office hours:\nThe Lisbon office opens at 9 on Monday.\n- Porto opens at 10 on Friday"
    assert [scope for scope, _ in await facts(listed)] == ["agent", "agent"]


async def test_what_follows_the_speakers_own_name_is_theirs() -> None:
    """The self-introduction is cut from the sentence ("I'm Hana, ..."), and with it the subject
    of what follows."""
    assert await facts("I'm Hana, head of sales at Initech since 2019.") == [
        ("user", "Hana said: Head of sales at Initech since 2019.")
    ]
    assert await facts("I'm Hana, I work at Initech since 2019.") == [
        ("user", "Hana works at Initech since 2019.")
    ]
