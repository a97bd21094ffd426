"""A habit or a state said to have ended ("I stopped taking aspirin", "I quit smoking", "I gave up
coffee") through the offline provider end to end: the stored fact it ends is retracted as "I no
longer take aspirin" retracts it, and nothing else is (h225, h230)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.llm.base import LLMRequest
from memory.llm.fact_overlap import keeps_the_thing, nothing_in_common
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig
from memory.prompts import ExtractFactsInput, PromptMessage
from memory.prompts.extract_facts import ExtractedFacts
from tests.llm.test_fact_decisions import alice_says, merged


async def facts_of(text: str) -> list[str]:
    """Every fact the offline provider keeps of Alice's message (none, when it keeps none)."""
    said = PromptMessage(
        seq=1,
        role="user",
        name="Alice",
        content=text,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        user_id="alice",
    )
    inp = ExtractFactsInput(
        agent=AgentConfig(agent_id="eve", name="Eve"), messages=[said], max_words=30
    )
    request = LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")
    answer = await HeuristicProvider().generate_structured(request, ExtractedFacts)
    return [fact.content for fact in answer.value.facts]


@pytest.mark.parametrize(
    ("first", "then", "said"),
    [
        (
            "I take aspirin every morning.",
            "I stopped taking aspirin.",
            "Alice stopped taking aspirin.",
        ),
        ("I smoke a pack a day.", "I quit smoking.", "Alice quit smoking."),
        ("I smoke cigarettes every day.", "I quit smoking cigarettes.", None),
        ("I play tennis on weekends.", "I no longer play tennis.", None),
        ("I play tennis on weekends.", "I have stopped playing tennis.", None),
        ("I drink coffee every morning.", "I gave up drinking coffee.", None),
        ("I drink coffee every morning.", "I gave up coffee.", "Alice gave up coffee."),
        ("I take aspirin every morning.", "I don't take aspirin anymore.", None),
        ("I am afraid of big dogs.", "I have stopped being afraid of big dogs.", None),
    ],
)
async def test_what_a_user_stopped_doing_retracts_the_stored_fact(
    first: str, then: str, said: str | None
) -> None:
    """It was: the stopped habit was added beside the fact it ends ("Alice takes aspirin every
    morning" stayed true), or not kept at all ("I quit smoking" was too short a sentence)."""
    stored, new = await alice_says(first), await alice_says(then)
    if said is not None:
        assert new == said  # what the user reads in place of the retracted fact
    assert await merged(stored, new) == ("DELETE", 3, None)
    # The guard after a decision (memory/pipeline/dedup.py) lets the rules' own DELETE pass.
    assert not nothing_in_common(new, stored, numbers=False) and keeps_the_thing(new, stored)


async def test_a_stopped_item_of_a_list_leaves_the_rest() -> None:
    stored = await alice_says("I take aspirin and 20 mg of Lipitor.")
    new = await alice_says("I stopped taking aspirin.")
    assert await merged(stored, new) == (
        "UPDATE",
        3,
        "Alice takes 20 mg of Lipitor; Alice stopped taking aspirin.",
    )


@pytest.mark.parametrize(
    ("first", "then"),
    [
        # Not the end of a habit: a visit, a stop at a number, another person's job.
        ("I go to the bakery on Main Street every day.", "I stopped by the bakery on Main Street."),
        ("I run 5 km every morning.", "I stopped at 45."),
        # A stored fact as a model may word it: "I love …" is a preference, no fact, offline.
        ("Alice loves jazz and the blues.", "I never stopped loving jazz."),
        ("Alice loves jazz music.", "I never stopped loving jazz music."),
        ("I have been taking aspirin daily.", "I never stopped taking aspirin daily."),
        ("I take aspirin every morning.", "I haven't stopped taking aspirin."),
        ("I take aspirin every morning.", "I have never stopped taking aspirin."),
        ("I drink coffee every morning.", "I never gave up coffee."),
        ("I smoke a pack a day.", "I stopped the car to smoke."),
    ],
)
async def test_what_is_no_end_of_a_habit_retracts_nothing(first: str, then: str) -> None:
    """Whatever of the second message is kept as a fact, the stored one stays."""
    stored = first if first.startswith("Alice") else await alice_says(first)
    for new in await facts_of(then):
        event, _, _ = await merged(stored, new)
        assert event in {"ADD", "NONE"}
    # Read as the rules read it, were it kept: no denial either.
    event, _, _ = await merged(stored, then.replace("I ", "Alice ", 1))
    assert event in {"ADD", "NONE"}


async def test_another_persons_quitting_retracts_nothing_of_the_user() -> None:
    assert await facts_of("She quit her job.") == []  # as before: not the user's, no fact
    for stored in ("Alice works at Acme.", "Alice's sister works at Acme."):
        assert await merged(stored, "She quit her job.") == ("ADD", None, None)
        assert await merged(stored, "Alice's sister quit her job.") == ("ADD", None, None)
