"""A number that names a thing is searched as an identifier, end to end: right after a noun that
names numbered things ("room 12 keys", "flight 12 leaves") it is no count of the word after it,
and beside a lowercase "may" (the verb: "Room 12 may be free") it is no day of the month."""

from __future__ import annotations

import pytest

from memory.identifiers import held_keys, identifiers
from memory.store.base import MemoryStore
from tests.rag.builders import MemoryWriter, at
from tests.rag.test_search_identifiers import DigitBlindEmbedder, ask, small_cap  # noqa: F401


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(
    "query",
    [
        "Where are my room 3 keys?",
        # Its other words match the newer facts better than the target's: the identifier's own
        # search alone finds the target, below them in the text list and past the RRF gate.
        "Is it true room 3 keys are at the desk?",
        "Is room 3 free on Friday?",
    ],
)
async def test_the_room_asked_about_comes_first(store: MemoryStore, query: str) -> None:
    # As in test_search_identifiers: the target is the oldest, its vector the farthest (more
    # words), and the newer facts fill the text search's (shrunk) cap: only the identifier's own
    # search finds it.
    writer = MemoryWriter(store)
    writer.embedder = DigitBlindEmbedder()
    await writer.facts(
        ("n3", "user", "u1", "Una says her room 3 keys are at the desk, she thinks.")
    )
    await writer.facts(
        *((f"n{i}", "user", "u1", f"My room {i} keys are at the desk.") for i in range(10, 54)),
        when=at(minutes=1),
    )

    result = await ask(store, query)

    assert result.hits[0].fact_id == "n3", [h.content for h in result.hits[:3]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("my room 12 keys are at the desk", ("12",)),
        ("flight 12 leaves at noon", ("12",)),
        ("Does bus 7 stops at the station?", ("7",)),
        ("Room 204 may be free", ("204",)),
        ("the package of order 5512 may arrive late", ("5512",)),
        # Still a date, a count, an ordinary question: nothing to rank by.
        ("What did Maria do on May 3, 2023?", ()),
        ("what did maria do on may 3?", ()),
        ("What happened on 3 may 2023?", ()),
        ("How old are her 3 kids?", ()),
        ("What are the names of Alice's 2 dogs?", ()),
    ],
)
def test_which_numbers_name_a_thing(query: str, expected: tuple[str, ...]) -> None:
    assert identifiers(query) == expected


def test_a_fact_holds_the_number_beside_a_verb_may_but_not_a_date() -> None:
    # A fact holding a key is ranked first when that key is asked about (``held``).
    assert held_keys("Room 12 may be free on Friday") == {"12"}
    assert held_keys("The parcel for order 5512 may arrive late") == {"5512"}
    assert held_keys("Alice moved on 12 May 2023") == frozenset()
    assert held_keys("Alice moved on May 12") == frozenset()
