"""The offline provider keeps distinct facts and passes over no message for one long word.

Distinct facts of one many-valued verb ("takes", "ran", "has", "likes") never overwrite or delete
each other, in one message or two; a denial deletes only the value it denies; real corrections
still update or delete. A sentence holding a word longer than an answer's item bound (a link, a
paragraph without spaces) is answered within the bound, the message's other facts kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.prompts import ExtractFactsInput, ExtractReflectionsInput, PromptMessage
from memory.prompts.common import MAX_TEXT_CHARS
from memory.prompts.decide_facts import (
    DecideFactsInput,
    ExistingFactShown,
    FactDecisions,
    NewFactShown,
)
from memory.prompts.extract_facts import ExtractedFacts
from memory.prompts.extract_reflections import ExtractedReflections
from memory.settings import FactSettings, Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder

llm = HeuristicProvider()
EVE = AgentConfig(agent_id="eve", name="Eve")
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

# (stored, new): both hold, whatever words and numbers they share.
BOTH_HOLD = [
    ("Alice takes 20 mg of Lipitor daily.", "Alice takes 50 mg of metformin daily."),
    ("Alice ran 5 km on Monday.", "Alice ran 10 km on Tuesday."),
    ("Alice ran 5 km on 23 November 2026.", "Alice ran 10 km on 24 November 2026."),
    ("Alice visited Rome in 2019.", "Alice visited Rome in 2021."),
    ("Alice is allergic to peanuts.", "Alice is not allergic to shellfish."),
    ("Alice likes jazz music.", "Alice dislikes country music."),
    (
        "Alice's sister Anna has 2 kids named Leo and Mia.",
        "Alice's sister Anna does not have kids named Tom and Mia.",
    ),
    ("Alice lives in Paris.", "Alice does not live in Berlin."),
]
# (stored, new, event): a new value of the same thing, or a denial of it.
CORRECTIONS = [
    ("Alice takes 20 mg of Lipitor daily.", "Alice takes 40 mg of Lipitor daily.", "UPDATE"),
    ("Alice takes 20 mg of Lipitor daily.", "Alice no longer takes Lipitor.", "DELETE"),
    ("Alice takes 20 mg of Lipitor daily.", "Alice does not take Lipitor anymore.", "DELETE"),
    ("Alice's phone is 555-1234.", "Alice's phone is now 555-9999.", "UPDATE"),
    ("Alice lives in Lisbon.", "Alice lives in Berlin.", "UPDATE"),
    ("Alice has 2 kids.", "Alice has 3 kids.", "UPDATE"),
    ("Alice is allergic to peanuts.", "Alice is not allergic to peanuts.", "DELETE"),
    ("Alice is vegetarian.", "Alice is not vegetarian any more.", "DELETE"),
    ("Alice likes jazz music.", "Alice dislikes jazz music.", "DELETE"),
    ("Alice likes jazz music a lot.", "Alice likes jazz music.", "NONE"),  # a restatement
]


async def decide(stored: str, new: str) -> str:
    inp = DecideFactsInput(
        new_facts=[NewFactShown(index=0, content=new, scope="user")],
        existing=[ExistingFactShown(index=3, content=stored, candidate_for=(0,))],
        max_words=30,
    )
    request = LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")
    [d] = (await llm.generate_structured(request, FactDecisions)).value.decisions
    return d.event


@pytest.mark.parametrize(("stored", "new"), BOTH_HOLD)
async def test_another_value_of_a_many_valued_verb_is_added(stored: str, new: str) -> None:
    assert await decide(stored, new) == "ADD", f"{new!r} must not replace {stored!r}"


@pytest.mark.parametrize(("stored", "new", "event"), CORRECTIONS)
async def test_a_correction_of_the_same_value_still_changes_it(
    stored: str, new: str, event: str
) -> None:
    assert await decide(stored, new) == event


# --- through the pipeline's own steps, as a formation stores them ---------------------------


@pytest.fixture
async def deps(tmp_path: Path) -> Deps:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    # MiniLM's calibrated gate (`make run`): "no longer takes Lipitor" is a candidate of the fact.
    settings = Settings(facts=FactSettings(dedup_similarity_threshold=0.45))
    return Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())


async def form(deps: Deps, session: str, text: str) -> dict[str, int]:
    """Record one message of Alice's and form it: the events decided."""
    said = MessageIn(
        message_id="m1",
        role="user",
        name="Alice",
        content=text,
        created_at=T0 + timedelta(hours=len(session)),
        user_id="alice",
    )
    await deps.store.record_messages(
        session, "eve", [said], weights={"user": 1.0}, chars_per_token=4.0, now=T0
    )
    req = FormationRequest(session_id=session, agent_id="eve", force=True)
    w = await window.load_window(deps.store, deps.settings, req)
    assert w is not None
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    await commit.commit(deps, w, new, decided.decisions, [], T0 + timedelta(days=1))
    events: dict[str, int] = {}
    for d in decided.decisions:
        events[d.event] = events.get(d.event, 0) + 1
    return events


async def valid_facts(deps: Deps) -> list[str]:
    found = await deps.store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=50)
    return sorted(f.content for f in found)


async def test_four_distinct_facts_in_one_message_are_all_kept(deps: Deps) -> None:
    await form(
        deps,
        "s1",
        "I take 20 mg of Lipitor daily. I take 50 mg of metformin daily. "
        "I ran 5 km on Monday. I ran 10 km on Tuesday.",
    )

    stored = await valid_facts(deps)
    assert len(stored) == 4, stored
    for said in ("20 mg of Lipitor", "50 mg of metformin", "ran 5 km", "ran 10 km"):
        assert any(said in fact for fact in stored), f"{said!r} was overwritten: {stored}"


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("I take 20 mg of Lipitor daily.", "I take 50 mg of metformin daily.", "Lipitor"),
        ("I ran 5 km on Monday.", "I ran 10 km on Tuesday.", "5 km"),
        (
            "My sister Anna has 2 kids named Leo and Mia.",
            "My sister Anna does not have kids named Tom and Mia.",
            "Leo and Mia",
        ),
        ("My friend Bob likes jazz music.", "My friend Bob dislikes country music.", "jazz"),
    ],
)
async def test_a_later_distinct_fact_leaves_the_first_valid(
    deps: Deps, first: str, second: str, kept: str
) -> None:
    await form(deps, "s1", first)
    assert any(kept in fact for fact in await valid_facts(deps))
    await form(deps, "s22", second)

    stored = await valid_facts(deps)
    assert len(stored) == 2, stored
    assert any(kept in fact for fact in stored), f"{second!r} removed the fact of {first!r}"


async def test_no_longer_taking_a_medication_retires_that_one_alone(deps: Deps) -> None:
    await form(deps, "s1", "I take 20 mg of Lipitor daily. I take 50 mg of metformin daily.")
    assert await form(deps, "s22", "I no longer take Lipitor.") == {"DELETE": 1}

    # The denial is what holds now, beside the other medication.
    stored = await valid_facts(deps)
    assert stored == ["Alice no longer takes Lipitor.", "Alice takes 50 mg of metformin daily."]


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        ("I work at Google.", "I also work at a bakery on weekends.", "Google"),
        ("I live in Paris.", "I also live in Lyon part of the year.", "Paris"),
        ("My phone number is 555-1234.", "My phone number is also 555-9876.", "555-1234"),
    ],
)
async def test_a_second_value_said_with_also_is_kept_beside_the_first(
    deps: Deps, first: str, second: str, kept: str
) -> None:
    await form(deps, "s1", first)
    await form(deps, "s22", second)

    stored = await valid_facts(deps)
    assert len(stored) == 2, stored
    assert any(kept in fact for fact in stored), f"{second!r} replaced {first!r}"


@pytest.mark.parametrize(
    ("first", "correction", "now"),
    [
        ("I work at Google.", "I now work at Apple.", ["Alice now works at Apple."]),
        ("I live in Paris.", "I now live in Berlin.", ["Alice now lives in Berlin."]),
        (
            "My phone number is 555-1234.",
            "My new phone number is 555-9999.",
            ["Alice's new phone number is 555-9999."],
        ),
        (
            "My birthday is on March 3.",
            "My birthday is on March 5, not March 3.",
            ["Alice's birthday is on March 5, not March 3."],
        ),
        (
            "My locker code is 7720.",
            "I changed my locker code to 7721.",
            ["Alice changed Alice's locker code to 7721."],
        ),
        (
            "My locker code is 7720.",
            "My locker code changed, it is now 7721.",
            ["Alice's locker code changed, it is now 7721."],
        ),
        ("I have a dog named Rex.", "I no longer have a dog.", ["Alice no longer has a dog."]),
        # "also" of another clause (h214 #1).
        (
            "My phone number is 555-1111.",
            "Actually my phone number is 555-2222, I also changed my email.",
            ["Alice's phone number is 555-2222, Alice also changed Alice's email."],
        ),
        (
            "My flight leaves at 7.",
            "My flight also got moved: it now leaves at 9.",
            ["Alice's flight also got moved: it now leaves at 9."],
        ),
        # A denial of one of two values keeps the other (h214 #2).
        (
            "I have a dog named Rex and a cat named Tom.",
            "I no longer have a dog.",
            ["Alice has a cat named Tom; Alice no longer has a dog."],
        ),
    ],
)
async def test_a_correction_in_common_words_leaves_no_old_value_valid(
    deps: Deps, first: str, correction: str, now: list[str]
) -> None:
    await form(deps, "s1", first)
    await form(deps, "s22", correction)

    assert await valid_facts(deps) == now


# --- one long word -----------------------------------------------------------------------------

LINK = "https://example.com/share?token=" + "a1b2c3d4e5" * 45


def alice(content: str) -> PromptMessage:
    return PromptMessage(
        seq=1, role="user", name="Alice", content=content, created_at=T0, user_id="alice"
    )


def request(inp: ExtractFactsInput | ExtractReflectionsInput) -> LLMRequest:
    return LLMRequest(task_input=inp, model="heuristic-rules-v1", system="", prompt="")


@pytest.mark.parametrize(
    "content",
    [
        f"My passport number is X9912345. Here is the form link for you: {LINK}",
        f"My passport number is X9912345 and the form is at {LINK} for you to fill in.",
    ],
)
async def test_a_long_link_leaves_the_messages_facts_extracted(content: str) -> None:
    inp = ExtractFactsInput(agent=EVE, messages=[alice(content)], max_words=30)
    out = (await llm.generate_structured(request(inp), ExtractedFacts)).value

    texts = [fact.content for fact in out.facts]
    assert any("passport number is X9912345" in text for text in texts), texts
    assert all(len(text) <= MAX_TEXT_CHARS for text in texts)


@pytest.mark.parametrize(
    "content",
    [
        f"My passport number is X9912345. Here is the form link for you: {LINK}",
        "\U0001f600" * 100_000,
        " ".join(["x" * 399] * 40),
    ],
)
async def test_a_long_word_leaves_the_reflections_within_their_bound(content: str) -> None:
    inp = ExtractReflectionsInput(
        agent=EVE,
        messages=[alice(content)],
        scopes=("agent", "user", "session"),
        current={},
        new_facts=[],
        max_words=35,
    )
    out = (await llm.generate_structured(request(inp), ExtractedReflections)).value

    [asked] = out.session_reflections
    assert asked.content.startswith("Alice asked: ")
    assert len(asked.content) <= MAX_TEXT_CHARS
