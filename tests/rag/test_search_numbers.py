"""Numbers and codes in a search query, end to end on every backend: a count is no identifier, a
date in a fact holds none, a code is found however its joiners are written, and the hits' scores
follow their order (README: "a number or code in the query finds the fact that holds it")."""

from __future__ import annotations

from typing import cast

import pytest

from memory.embedding import Embedder, make_embedder
from memory.rag import search_facts
from memory.search_results import SearchResult
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import T0, MemoryWriter, agent, session
from tests.rag.test_search_identifiers import DigitBlindEmbedder

# Facts holding a "2" that answer nothing about dogs or restaurants.
WITH_A_TWO = [
    "Alice's meeting is in room 2",
    "Alice bought 2 tickets for the opera",
    "Alice owns 2 cars",
    "Alice's flat is on floor 2",
    "Alice takes bus 2 to work",
    "Alice drinks 2 coffees a day",
    "Alice has 2 sisters",
    "Alice's team ships release 2 in June",
    "Alice ran 2 marathons",
    "Alice speaks 2 languages",
    "Alice's gym locker is number 2",
]
# What Bob likes: facts without the question's words, so that those words are rare enough to count.
FILLER = [
    *("tea", "jazz", "chess", "sailing", "poetry", "cycling", "cheese", "opera", "hiking"),
    *("baking", "golf", "rugby", "salsa", "tango", "sushi", "ramen"),
]
MONTHS = ["January", "February", "March", "April"]


async def ask(store: MemoryStore, query: str, embedder: Embedder | None = None) -> SearchResult:
    return await search_facts(
        store, embedder or WordHashEmbedder(), Settings(), agent=agent(),
        session=session("s2", "u1"), user_id="u1", queries=[query], now=T0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "question"),
    [
        ("Alice's dogs are called Rex and Bella", "What are the names of Alice's 2 dogs?"),
        ("Alice recommended Nopa and Zuni Cafe", "Which 2 restaurants did Alice recommend?"),
    ],
)
async def test_a_count_in_a_question_does_not_push_the_answer_out(
    store: MemoryStore, content: str, question: str
) -> None:
    # The product's default embedder (MiniLM): it puts the facts holding "2" near the question.
    embedder = make_embedder(Settings())
    writer = MemoryWriter(store)
    # MemoryWriter's attribute is typed by its default; it only calls the Embedder interface.
    writer.embedder = cast(WordHashEmbedder, embedder)
    await writer.facts(
        ("answer", "user", "u1", content),
        *[(f"two{i}", "user", "u1", text) for i, text in enumerate(WITH_A_TWO)],
    )

    result = await ask(store, question, embedder)

    assert "answer" in [h.fact_id for h in result.hits]


async def test_a_date_in_a_fact_does_not_hold_the_number_asked_about(store: MemoryStore) -> None:
    # Formed facts carry absolute dates: these say "2" only as the day of the month.
    await MemoryWriter(store).facts(
        ("answer", "user", "u1", "Alice keeps her climbing shoes in locker 2"),
        *[
            (f"d{i}", "user", "u1", f"Alice put her things in the gym locker on 2 {month} 2023")
            for i, month in enumerate(MONTHS)
        ],
        *[(f"f{i}", "user", "u1", f"Bob likes {thing}") for i, thing in enumerate(FILLER)],
    )

    result = await ask(store, "What did Alice put in the gym locker 2?")

    assert result.hits[0].fact_id == "answer"


@pytest.mark.parametrize(
    ("written", "query"),
    [
        ("A{}", "Where is order A-17?"),
        ("A{}", "where is order a17?"),
    ],
)
async def test_a_code_is_found_whatever_its_joiners(
    store: MemoryStore, written: str, query: str
) -> None:
    # Facts alike but for their code, which the embedder cannot tell apart (MiniLM nearly can't).
    writer = MemoryWriter(store)
    writer.embedder = DigitBlindEmbedder()
    await writer.facts(
        *[
            (f"o{i}", "user", "u1", f"Order {written.format(i)} shipped to the Lisbon warehouse")
            for i in range(1, 40)
        ]
    )

    result = await ask(store, query, DigitBlindEmbedder())

    assert result.hits[0].fact_id == "o17"


async def test_hits_come_best_score_first(store: MemoryStore) -> None:
    await MemoryWriter(store).facts(
        ("code", "user", "u1", "Alice paid A-17 by card"),
        ("status", "user", "u1", "Alice checks the delivery status of her orders every day"),
        ("status2", "user", "u1", "Alice wants order status updates by email"),
        *[
            (f"g{i}", "user", "u1", f"Alice mentioned topic {i} in the weekly sync")
            for i in range(8)
        ],
    )

    result = await ask(store, "order status A-17")

    assert result.hits[0].fact_id == "code"  # the identifier's tier
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[-1] > 0 and scores[0] <= 1
