"""Contract: a phrase of a text query (words joined by hyphens, "a-17": rules.text.query_parts)
finds the facts holding its words next to each other, whatever stands between them ("A-17",
"$55,007"), on every backend, and never its words alone: with the candidate cap filled by newer
facts holding a bare "17" or "007", the fact holding the code is still found."""

from __future__ import annotations

import pytest

from memory.store.base import MemoryStore
from tests.store.builders import Former, add, unit, user_filter

_CAPS = {
    "sqlite": "memory.store.sqlite.search.CANDIDATE_CAP",
    "postgres": "memory.store.postgres.search.CANDIDATE_CAP",
    "mongo": "memory.store.mongo.search.CANDIDATE_CAP",
}


@pytest.fixture
def small_cap(backend: tuple[str, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_CAPS[backend[0]], 5)


async def _seed(store: MemoryStore) -> None:
    former = await Former(store).start(messages=2)
    await former.form(
        add("code", "Her order A-17 shipped on Monday", unit(1, 0)),
        add("amount", "He paid $55,007 for the boat", unit(0, 1)),
        add("apart", "Row 17 has a view", unit(0, 0, 1)),  # "a" and "17", not next to each other
        add("longer", "Order A-170 is late", unit(0, 0, 0, 1)),
    )
    await former.form(  # newer facts holding the parts alone: more than the cap
        *(add(f"n{i}", f"Locker 17 holds 55 boxes and 007 films, take {i}", unit(1, i))
          for i in range(8))
    )  # fmt: skip


async def _found(store: MemoryStore, query: str) -> list[str]:
    return [h.fact.fact_id for h in await store.text_search(query, user_filter(), limit=20)]


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(
    ("query", "expected"),
    [("a17 a-17", ["code"]), ("55007 55-007", ["amount"]), ("A-17", ["code"])],
)
async def test_a_phrase_finds_its_words_next_to_each_other_past_the_cap(
    store: MemoryStore, query: str, expected: list[str]
) -> None:
    await _seed(store)

    assert await _found(store, query) == expected


async def test_a_query_without_a_phrase_finds_each_word_alone(store: MemoryStore) -> None:
    await _seed(store)

    found = set(await _found(store, "a 17"))
    assert found == {"code", "apart", "longer"} | {f"n{i}" for i in range(8)}
