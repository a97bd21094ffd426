"""A word the text index holds is found by the text half of search however Unicode spells it:
"Hauptstraße", a ligature, accents, as the fact spells it or folded ("hauptstrasse" finds
"Hauptstraße"). Every store folds fact and query alike (memory.store.rules.text.fold): SQLite's
FTS5 tokenizer alone lowercases but keeps "ß", ligatures, subscripts, Greek final sigma and a
second mark of a letter, so PostgreSQL found facts SQLite did not."""

from __future__ import annotations

import pytest

from memory.rag import search_facts
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import T0, MemoryWriter, agent

WORDS = [
    ("Hauptstraße", "The Berlin office is at Hauptstraße 5"),
    ("ﬁnance", "The ﬁnance team meets on Fridays"),
    ("Café", "The team lunch is at Café Noir"),
    ("café", "The team lunch is at Café Noir"),
]
# A query spelled otherwise than the fact, the same word once folded.
FOLDED = [
    ("hauptstrasse", "The Berlin office is at Hauptstraße 5"),
    ("Weißwurst", "The team lunch is Weisswurst on Fridays"),
    ("finance", "The ﬁnance team meets on Fridays"),
    ("ﬁnance", "The finance team meets on Fridays"),
    ("pho", "The team lunch is phở bò on Mondays"),  # Vietnamese: two marks on one letter
    ("ΣΟΦΙΑ", "Σοφία runs the team lunch"),
    ("Σοφίας", "The lunch menu is ΣΟΦΙΑΣ's"),  # final sigma
    ("h2o", "The team lunch serves only H₂O"),
]
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize(("query", "fact"), WORDS, ids=[q for q, _ in WORDS])
async def test_a_word_as_the_fact_spells_it_is_found_by_text(
    store: MemoryStore, query: str, fact: str
) -> None:
    await _assert_found_alone(store, query, fact)


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize(("query", "fact"), FOLDED, ids=[q for q, _ in FOLDED])
async def test_a_word_spelled_another_way_is_found_by_text(
    store: MemoryStore, query: str, fact: str
) -> None:
    await _assert_found_alone(store, query, fact)


async def _assert_found_alone(store: MemoryStore, query: str, fact: str) -> None:
    writer = MemoryWriter(store)
    await writer.facts(
        ("f-it", "agent", None, fact),
        *[(f"g{i}", "agent", None, f"Filler fact {i} about the lunch menu") for i in range(30)],
    )
    result = await search_facts(
        store, WordHashEmbedder(), Settings(), agent=agent(), session=None, user_id=None,
        queries=[query], mode="text", now=T0,
    )  # fmt: skip
    assert [h.fact_id for h in result.hits] == ["f-it"]
