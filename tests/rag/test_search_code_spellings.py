"""search_facts finds the fact holding a code or a number however either side joins its parts:
"A17" finds "A-17", "55007" finds "$55,007", on every backend, with the text search's candidate
cap filled by newer facts holding the bare parts ("17", "55", "007"): the identifier's other
spellings are asked for as phrases (memory.query_words.phrases), never as the parts alone."""

from __future__ import annotations

import pytest

from memory.query_words import text_queries
from memory.rag import search_facts
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import MemoryWriter, agent, at, session

_CAPS = {
    "sqlite": "memory.store.sqlite.search.CANDIDATE_CAP",
    "postgres": "memory.store.postgres.search.CANDIDATE_CAP",
    "mongo": "memory.store.mongo.search.CANDIDATE_CAP",
}


@pytest.fixture
def small_cap(backend: tuple[str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_CAPS[backend[0]], 5)


def test_the_other_spellings_are_phrases_not_parts() -> None:
    assert text_queries("A17") == ["A17", "a17 a-17"]
    assert text_queries("55007") == ["55007", "55007 55-007"]
    assert text_queries("What is my favourite colour?") == ["favourite colour"]


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(("query", "target"), [("A17", "code"), ("55007", "amount")])
async def test_a_code_is_found_however_its_parts_are_joined(
    store: MemoryStore, query: str, target: str
) -> None:
    writer = MemoryWriter(store)
    await writer.facts(
        ("code", "user", "u1", "Her order A-17 shipped on Monday"),
        ("amount", "user", "u1", "Bob paid $55,007 for the boat"),
    )
    await writer.facts(
        *((f"n{i}", "user", "u1", f"Locker 17 holds a box of 55 and 007 films, take {i}")
          for i in range(12)),
        when=at(minutes=1),
    )  # fmt: skip

    result = await search_facts(
        store, WordHashEmbedder(), Settings(), agent=agent(), session=session("s1", "u1"),
        user_id="u1", queries=[query], top_k=5, mode="text", now=at(days=1),
    )  # fmt: skip

    assert result.hits and result.hits[0].fact_id == target


def test_a_code_typed_as_stored_is_searched_as_itself_not_by_its_parts() -> None:
    # The joined key and the code as a phrase; never "17", "55", "007", "covid" or "19" alone.
    assert text_queries("A-17")[1:] == ["a17 a-17"]
    assert text_queries("$55,007")[1:] == ["55007 55-007"]
    assert text_queries("COVID-19")[1:] == ["covid19 covid-19"]
    # A 10-digit number as a phone number is written (3-3-4), not as arbitrary thousands groups.
    assert text_queries("5551234567") == ["5551234567", "5551234567 555-123-4567"]
    assert text_queries("555-123-4567")[1:] == ["5551234567 555-123-4567"]
    assert text_queries("15551234567")[1:] == ["15551234567 1-555-123-4567"]
    # Seven digits: an amount ("$5,551,234") or a local phone number ("555-1234").
    assert text_queries("5551234")[1:] == ["5551234 5-551-234 555-1234"]
    # An amount keeps its thousands groups.
    assert text_queries("$551,234")[1:] == ["551234 551-234"]
    # A plain word query searches as before.
    assert text_queries("e-mail follow-up") == ["e mail follow"]


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("A-17", "code"),
        ("order A-17", "code"),
        ("$55,007", "amount"),
        ("COVID-19", "illness"),
        ("When did she have COVID-19?", "illness"),
        # A phone number typed as stored, or as its bare digits: 3-3-4 is how it is written.
        ("555-123-4567", "phone"),
        ("5551234567", "phone"),
    ],
)
async def test_a_code_typed_as_stored_is_found_among_facts_holding_its_parts(
    store: MemoryStore, query: str, target: str
) -> None:
    # The newer facts hold every part of each code alone ("17", "55", "007", "covid", "19") and
    # fill the text search's (shrunk) cap: only a search for the code itself finds the target.
    writer = MemoryWriter(store)
    await writer.facts(
        ("code", "user", "u1", "Her order A-17 shipped on Monday"),
        ("amount", "user", "u1", "Bob paid $55,007 for the boat"),
        ("illness", "user", "u1", "She had COVID-19 in March"),
        ("phone", "user", "u1", "His number is (555) 123-4567"),
    )
    await writer.facts(
        *((f"n{i}", "user", "u1",
           f"Locker 17 holds a box of 55 and 007 films, 19 covid cases, 555 pins, "
           f"123 cards and 4567 bags, take {i}")
          for i in range(12)),
        when=at(minutes=1),
    )  # fmt: skip

    result = await search_facts(
        store, WordHashEmbedder(), Settings(), agent=agent(), session=session("s1", "u1"),
        user_id="u1", queries=[query], top_k=5, mode="text", now=at(days=1),
    )  # fmt: skip

    assert result.hits and result.hits[0].fact_id == target, [h.content for h in result.hits]
