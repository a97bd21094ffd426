"""search_facts with DEFAULT settings and the real default embedder (MiniLM): the gates are the
embedder's calibrated ones, hybrid never ranks below its own text-only mode, and every hit carries
a score a reader can interpret."""

from __future__ import annotations

import pytest

from memory.embedding.local import CALIBRATION, LocalMiniLMEmbedder
from memory.models import FactScope
from memory.rag import search_facts
from memory.search_results import SearchMode, SearchResult
from memory.settings import RagSettings, Settings
from memory.store.base import MemoryStore
from tests.rag.builders import MemoryWriter, agent, at

# A small LoCoMo-like store: statements of one person, asked about in questions that share few
# words with the answer.
STATEMENTS = [
    ("hike", "Maria went hiking in the Alps with her sister last August"),
    ("kayak", "Maria bought a red kayak and paddles on the lake on Sundays"),
    ("climb", "Maria started rock climbing at an indoor gym in March"),
    ("ski", "Maria broke her wrist while skiing in Colorado two winters ago"),
    ("surf", "Maria took surfing lessons in Portugal during her honeymoon"),
    ("cycle", "Maria cycles twenty kilometres to work when it does not rain"),
    ("run", "Maria finished her first marathon in Berlin in under four hours"),
    ("swim", "Maria swims in the public pool before breakfast"),
    ("dog", "Maria adopted a beagle puppy called Biscuit from the shelter"),
    ("job", "Maria works as a nurse in the children's ward of the city hospital"),
    ("cook", "Maria's favourite dish to cook is mushroom risotto"),
    ("book", "Maria is reading a novel about a lighthouse keeper"),
    ("music", "Maria plays the cello in a community orchestra on Thursdays"),
    ("allergy", "Maria is allergic to cats and sneezes around them"),
    ("car", "Maria sold her old hatchback and now takes the tram"),
    ("garden", "Maria grows tomatoes and basil on her balcony"),
    ("study", "Maria is studying Japanese to travel to Kyoto next spring"),
    ("brother", "Maria's brother Tom moved to Canada for a software job"),
    ("birthday", "Maria celebrated her thirtieth birthday with a picnic by the river"),
    ("movie", "Maria watched a documentary about octopuses and loved it"),
]
QUESTIONS = [
    ("What pet does Maria have?", "dog"),
    ("What is Maria's profession?", "job"),
    ("Which instrument does Maria play?", "music"),
    ("What injury did Maria get on a winter holiday?", "ski"),
    ("Which language is Maria learning?", "study"),
    ("Where did Maria's sibling relocate?", "brother"),
    ("What vegetables does Maria grow at home?", "garden"),
    ("How does Maria get to work?", "cycle"),
    ("What food does Maria like to make?", "cook"),
    ("What race did Maria complete?", "run"),
]
# Eight words that each occur in one statement: eight text hits for one query, more than the
# six ranks 002's fused gate lets through from a single list.
SPORTS = "hiking kayak climbing skiing surfing cycles marathon swims"


@pytest.fixture(scope="module")
def minilm() -> LocalMiniLMEmbedder:
    return LocalMiniLMEmbedder(threads=2)


async def seed(store: MemoryStore, embedder: LocalMiniLMEmbedder) -> None:
    writer = MemoryWriter(store, "a1")
    writer.embedder = embedder  # type: ignore[assignment]  # the real model instead of the fake
    scope: FactScope = "agent"
    await writer.facts(*((f"f-{key}", scope, None, text) for key, text in STATEMENTS))


async def ask(
    store: MemoryStore,
    embedder: LocalMiniLMEmbedder,
    query: str,
    mode: SearchMode,
    *,
    settings: Settings | None = None,
    debug: bool = False,
) -> SearchResult:
    return await search_facts(
        store, embedder, settings or Settings(), agent=agent(), session=None, user_id=None,
        queries=[query], top_k=25, debug=debug, now=at(days=2), mode=mode,
    )  # fmt: skip


def ids(result: SearchResult) -> list[str]:
    return [hit.fact_id for hit in result.hits]


def recall_at(ranked: list[str], answer: str, cut: int) -> float:
    return 1.0 if f"f-{answer}" in ranked[:cut] else 0.0


async def test_default_hybrid_ranks_answers_at_least_as_well_as_text_only(
    sqlite_store: MemoryStore, minilm: LocalMiniLMEmbedder
) -> None:
    await seed(sqlite_store, minilm)
    for cut in (1, 3, 5):
        totals: dict[SearchMode, float] = {"text": 0.0, "hybrid": 0.0}
        for question, answer in QUESTIONS:
            for mode in totals:
                found = ids(await ask(sqlite_store, minilm, question, mode))
                totals[mode] += recall_at(found, answer, cut)
        assert totals["hybrid"] >= totals["text"], f"recall@{cut}: {totals}"
    # The questions share few words with their answers: the vector list does real work.
    assert totals["hybrid"] > totals["text"]


async def test_every_text_hit_is_a_default_hybrid_hit(
    sqlite_store: MemoryStore, minilm: LocalMiniLMEmbedder
) -> None:
    await seed(sqlite_store, minilm)
    text = ids(await ask(sqlite_store, minilm, SPORTS, "text"))
    hybrid = ids(await ask(sqlite_store, minilm, SPORTS, "hybrid"))

    assert len(text) == 8
    assert set(text) <= set(hybrid)
    # 002's numbers, set for OpenAI's scale, drop text hits that MiniLM's vectors do not confirm.
    fixed = Settings(rag=RagSettings(calibrated_gates=False))
    assert not set(text) <= set(
        ids(await ask(sqlite_store, minilm, SPORTS, "hybrid", settings=fixed))
    )


async def test_default_gates_are_the_embedders_and_scores_are_readable(
    sqlite_store: MemoryStore, minilm: LocalMiniLMEmbedder
) -> None:
    await seed(sqlite_store, minilm)
    result = await ask(
        sqlite_store, minilm, "Which instrument does Maria play?", "hybrid", debug=True
    )

    assert result.debug is not None
    assert result.debug.embedding_model == minilm.model
    assert result.debug.thresholds == {
        "semantic": CALIBRATION.cosine_gate,
        "text": Settings().rag.text_score_threshold,
        "rrf": CALIBRATION.rrf_gate,
    }
    assert result.hits and result.hits[0].fact_id == "f-music"
    assert all(0 < hit.score <= 1 for hit in result.hits)  # a zero-score hit is not a hit
    for hit in result.hits:
        assert hit.cosine is not None or hit.bm25 is not None
        assert hit.cosine is None or hit.cosine >= CALIBRATION.cosine_gate
    # A hit's cosine and BM25 are the raw scores of the lists the debug output shows.
    raw = {(lst.source, c.fact_id): c.score for lst in result.debug.lists for c in lst.candidates}
    top = result.hits[0]
    assert top.cosine == pytest.approx(raw[("vector", top.fact_id)], abs=1e-4)
    assert top.bm25 == pytest.approx(raw[("text", top.fact_id)], abs=1e-4)


def test_setting_a_gate_explicitly_turns_the_calibration_off() -> None:
    assert RagSettings().calibrated_gates
    assert not RagSettings(semantic_score_threshold=0.5).calibrated_gates
    assert not RagSettings(rrf_score_threshold=0.01).calibrated_gates
    assert RagSettings(semantic_score_threshold=0.5, calibrated_gates=True).calibrated_gates
