"""A word the text index holds is found by the text half of search however Unicode spells it:
"Hauptstraße", a ligature, accents. SQLite's FTS5 tokenizer lowercases without folding "ß" to
"ss", so the match expression must lowercase the same way (a casefolded "hauptstrasse" matched
nothing there, while PostgreSQL found the fact)."""

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


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)  # fmt: skip
@pytest.mark.parametrize(("query", "fact"), WORDS, ids=[q for q, _ in WORDS])
async def test_a_word_as_the_fact_spells_it_is_found_by_text(
    store: MemoryStore, query: str, fact: str
) -> None:
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
