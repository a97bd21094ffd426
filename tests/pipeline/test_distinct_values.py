"""Distinct facts never overwrite each other, and nothing said is dropped, whatever a model answers
(an audit's findings: a same-text rule that read "A+" as "A-", a model's NONE of a new value, a
merged text with the old value, one person's fact changed with another's).

Each case is told twice: as what a user checks, the facts stored after two formations on a real
SQLite store (formation step by step as the workflow runs it, tests/isolation/bench.py, the model
scripted to answer as a hosted one may), and as the dedup decision the rules make of the answer."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory import ids
from memory.deps import Deps
from memory.models import AgentConfig, FactFilter
from memory.pipeline import dedup
from memory.pipeline.dedup import resolve
from memory.pipeline.types import CandidatesResult, NewFact, SimilarFact
from memory.prompts.decide_facts import FactDecision
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder
from tests.harness import facts, reflections
from tests.isolation.bench import Bench
from tests.realmodel.identifier_cases import AGENT, window

EVE = AgentConfig(agent_id="eve", name="Eve")


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    made = await Bench.create(store, [EVE])
    made.llm = ScriptedLLM({"extract_reflections": reflections(), "same_fact": {"same": False}})
    yield made
    await store.close()


async def _said_then(bench: Bench, first: str, then: str, answer: FactDecision | None) -> int:
    """``first`` said and formed, then ``then``, the model answering ``answer`` for it if asked;
    how many times it was asked."""
    llm = bench.llm
    assert isinstance(llm, ScriptedLLM)
    for session, text in (("s1", first), ("s2", then)):
        await bench.say("eve", session, text, user_id="alice")
        llm.script("extract_facts", facts((text, "user"), sources=[1]))
        if session == "s2" and answer is not None:
            llm.script("decide_facts", {"decisions": [answer.model_dump()]})
        await bench.form(session, "eve")
    return len(llm.calls("decide_facts"))


async def _valid(bench: Bench) -> list[str]:
    stored = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    return sorted(f.content for f in stored if f.invalidated_at is None)


def _answer(event: str, merged: str | None = None) -> FactDecision:
    return FactDecision(new_fact_index=0, event=event, existing_index=0, merged_text=merged)


def _decided(said: str, stored: str, answer: FactDecision) -> tuple[str, str | None, str]:
    new = NewFact(index=0, content=said, scope="user")
    old = SimilarFact(fact_id="f-old", content=stored, version=1, similarity=0.95)
    [d] = resolve([answer], [new], [old], {0: {0}})
    return d.event, d.existing_id, d.final_text or said


# ---------------------------------------------------------------- the same-text rule


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("Alice's blood type is A+.", "Alice's blood type is A-."),
        ("The cold room must stay at 18 degrees.", "The cold room must stay at -18 degrees."),
    ],
)
async def test_a_sign_changed_is_a_new_value_stored(bench: Bench, first: str, then: str) -> None:
    asked = await _said_then(bench, first, then, _answer("UPDATE"))

    assert await _valid(bench) == [then]
    assert asked == 1  # no rule read the two as the same words


async def test_a_password_in_another_case_replaces_the_old_one(bench: Bench) -> None:
    first, then = "The office wifi password is Tr0ub4dor.", "The office wifi password is tr0ub4dor."
    asked = await _said_then(bench, first, then, None)

    [fact] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert (fact.content, fact.version, fact.previous_content) == (then, 2, first)
    assert asked == 0  # decided by rule


async def test_a_users_code_in_another_case_leaves_the_agents_fact(bench: Bench) -> None:
    """A user's fact never changes what every user of the agent reads, by rule either."""
    first, then = "The office door code is QX7Bz.", "The office door code is QX7BZ."
    assert isinstance(bench.llm, ScriptedLLM)
    for session, text, scope in (("s1", first, "agent"), ("s2", then, "user")):
        await bench.say("eve", session, text, user_id="alice")
        bench.llm.script("extract_facts", facts((text, scope), sources=[1]))
        await bench.form(session, "eve")

    stored = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert sorted((f.scope, f.content, f.version) for f in stored) == [
        ("agent", first, 1),
        ("user", then, 1),
    ]


def _folded_key(text: str) -> str:
    """memory.ids.normalize_text before codes kept their case."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).rstrip(".!;")


async def test_a_fact_stored_under_the_old_key_is_repeated_and_corrected(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fact stored when the key folded every letter: its repeat is no duplicate and no error,
    and its code in another case (whose new key is the old one's) is stored, not dropped."""
    first = "Alice's booking reference is QX7BZ."
    with monkeypatch.context() as old:
        old.setattr(ids, "normalize_text", _folded_key)
        await bench.say("eve", "s1", first, user_id="alice")
        assert isinstance(bench.llm, ScriptedLLM)
        bench.llm.script("extract_facts", facts((first, "user"), sources=[1]))
        await bench.form("s1", "eve")
    [stored] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert stored.hash == hashlib.sha256(_folded_key(first).encode()).hexdigest()

    for session, text in (("s2", first), ("s3", "Alice's booking reference is qx7bz.")):
        await bench.say("eve", session, text, user_id="alice")
        bench.llm.script("extract_facts", facts((text, "user"), sources=[1]))
        await bench.form(session, "eve")

    [fact] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert (fact.content, fact.version) == ("Alice's booking reference is qx7bz.", 2)
    assert bench.llm.calls("decide_facts") == []  # the rules decided both
    # Its new key is the old fact's: an ADD would have been taken for that fact and dropped.
    assert fact.hash == ids.content_hash(fact.content) == stored.hash


# ---------------------------------------------------------------- a model's NONE


async def test_a_new_number_the_model_calls_known_is_kept(bench: Bench) -> None:
    then = "Alice's phone number is now 555-9999."
    await _said_then(bench, "Alice's phone number is 555-1234.", then, _answer("NONE"))

    assert then in await _valid(bench)


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("Alice's locker code is 4411.", "Alice's locker code is 4412."),
        ("Alice's flight to Rome is on May 3.", "Alice's flight to Rome is on May 5."),
        ("Alice takes 20 mg of Lipitor daily.", "Alice takes 50 mg of Lipitor daily."),
        ("Alice's phone number is 555-1234.", "Alice's phone number is 555-9999."),
        ("Alice is allergic to peanuts.", "Alice is allergic to shellfish."),
        ("Alice lives in Paris.", "Alice lives in Berlin."),
        ("The office wifi password is Tr0ub4dor.", "The office wifi password is TR0UB4DOR!"),
        ("Alice works at Google.", "Alice worked at Google."),
    ],
)
def test_a_none_of_a_new_value_is_refused(stored: str, said: str) -> None:
    assert _decided(said, stored, _answer("NONE")) == ("ADD", None, said)


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("Alice now lives in Lisbon.", "Alice moved to Lisbon."),
        ("Alice moved to Lisbon.", "Alice now lives in Lisbon."),
        ("Bob is 40 years old.", "Bob turned 40 years old."),
        ("Jon loves dancing.", "Jon is passionate about dancing."),
        ("Alice works at Acme as CTO.", "Alice works at Acme."),
    ],
)
def test_a_none_of_a_restatement_stands(stored: str, said: str) -> None:
    assert _decided(said, stored, _answer("NONE")) == ("NONE", "f-old", said)


# ---------------------------------------------------------------- a model's merged text


async def test_a_merge_holding_the_old_number_stores_the_new_one(bench: Bench) -> None:
    first, then = "Alice's phone number is 555-1234.", "Alice's phone number is 555-9999."
    await _said_then(bench, first, then, _answer("UPDATE", first))

    assert await _valid(bench) == [then]


@pytest.mark.parametrize(
    ("stored", "said", "merged"),
    [
        (
            "Alice's phone number is 555-1234.",
            "Alice's phone number is 555-9999.",
            "Alice's phone number is 555-1234.",
        ),
        ("Alice lives in Paris.", "Alice lives in Berlin.", "Bob lives in Berlin."),
        (
            "Alice works at Acme.",
            "Alice works at Acme as CTO.",
            "Alice works at Acme as an intern.",
        ),
        (
            "Alice's flight is on May 3.",
            "Alice's flight is on May 5.",
            "Alice's flight is on May 5 at 9:40.",
        ),
    ],
)
def test_a_merge_that_changes_what_was_said_is_not_stored(
    stored: str, said: str, merged: str
) -> None:
    assert _decided(said, stored, _answer("UPDATE", merged)) == ("UPDATE", "f-old", said)


def test_a_merge_that_words_both_facts_as_one_is_stored() -> None:
    merged = "Alice has been the CTO of Acme since 2024."
    answer = _answer("UPDATE", merged)
    said = "Alice works at Acme as CTO since 2024."
    assert _decided(said, "Alice works at Acme.", answer) == ("UPDATE", "f-old", merged)


# ---------------------------------------------------------------- another person's fact


async def test_one_persons_code_never_replaces_anothers(bench: Bench) -> None:
    first = "Alice's locker code at the Main Street gym is 4412."
    then = "Bob's locker code at the Main Street gym is 7731."
    await _said_then(bench, first, then, _answer("UPDATE"))

    assert await _valid(bench) == sorted([first, then])


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("Alice's locker code is 4412.", "Bob's locker code is 7731."),
        (
            "Dr. Smith's office hours are Monday 9 to 12.",
            "Dr. Jones's office hours are Tuesday 2 to 5.",
        ),
    ],
)
def test_a_change_of_another_persons_fact_is_refused(stored: str, said: str, event: str) -> None:
    assert _decided(said, stored, _answer(event)) == ("ADD", None, said)


@pytest.mark.parametrize("event", ["UPDATE", "DELETE"])
@pytest.mark.parametrize(
    ("stored", "said"),
    [
        (
            "Alice paid 120 dollars for the concert tickets.",
            "Alice paid 80 dollars for the museum tickets.",
        ),
        ("Alice scored 92 in the math exam.", "Alice scored 75 in the history exam."),
    ],
)
def test_a_change_of_another_things_value_is_refused(stored: str, said: str, event: str) -> None:
    """A model's UPDATE of one event by another that shares its verb: two facts (H98)."""
    assert _decided(said, stored, _answer(event)) == ("ADD", None, said)


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("User's locker code is 4412.", "Alice's locker code is 7731."),  # the user may be Alice
        ("Alice's locker code is 4412.", "Alice Smith's locker code is 7731."),
        ("Alice's locker code is 4412.", "Alice's locker code is now 7731."),
    ],
)
def test_a_change_of_the_same_owners_fact_stands(stored: str, said: str) -> None:
    assert _decided(said, stored, _answer("UPDATE")) == ("UPDATE", "f-old", said)


async def test_a_refused_none_is_not_asked_again(tmp_path: Path) -> None:
    """The second look (restatements.py) asks a model whether a kept fact states a stored one
    again; it never asks about a pair whose NONE the rules refused, or its yes would drop the
    new value after all."""
    store = SQLiteStore(tmp_path / "look.db")
    await store.setup()
    await store.upsert_agent(AGENT)
    llm = ScriptedLLM({"same_fact": {"same": True}})
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    stored = SimilarFact(
        fact_id="f-old",
        content="Alice is allergic to peanuts since 2020.",
        version=1,
        similarity=0.9,
    )
    said = "Alice is allergic to shellfish since 2020."
    llm.script("decide_facts", {"decisions": [_answer("NONE").model_dump()]})
    new = [NewFact(index=0, content=said, scope="user")]

    decided = await dedup.decide(deps, window(), new, CandidatesResult(by_new_index={0: [stored]}))

    assert [(d.event, d.final_text) for d in decided.decisions] == [("ADD", said)]
    assert llm.calls("same_fact") == []
    await store.close()
