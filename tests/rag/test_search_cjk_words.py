"""The text half of search finds a Chinese or Japanese word inside a sentence (written without
spaces): every store splits a run of CJK characters into bigrams (memory.store.rules.text), so
"北京" finds "爱丽丝住在北京" as "Berlin" finds "Alice lives in Berlin"."""

from __future__ import annotations

import pytest

from memory.rag import search_facts
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.rag.builders import T0, MemoryWriter, agent

WORDS = [
    ("北京", "爱丽丝住在北京"),
    ("東京", "東京に住んでいます"),
    ("アイスクリーム", "好きな食べ物はアイスクリームです"),
    ("Where does Alice live? 北京", "爱丽丝住在北京"),
]
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
@pytest.mark.parametrize(("query", "fact"), WORDS, ids=[q for q, _ in WORDS])
async def test_a_cjk_word_inside_a_sentence_is_found_by_text(
    store: MemoryStore, query: str, fact: str
) -> None:
    writer = MemoryWriter(store)
    await writer.facts(
        ("f-it", "agent", None, fact),
        ("f-other", "agent", None, "鲍勃住在上海"),
        *[(f"g{i}", "agent", None, f"Filler fact {i} about the lunch menu") for i in range(10)],
    )
    result = await search_facts(
        store, WordHashEmbedder(), Settings(), agent=agent(), session=None, user_id=None,
        queries=[query], mode="text", now=T0,
    )  # fmt: skip
    assert [h.fact_id for h in result.hits] == ["f-it"]
