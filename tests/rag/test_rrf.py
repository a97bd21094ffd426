"""The pure parts of search_facts: fusion, the RRF gate, query cleaning and text analysis."""

from __future__ import annotations

import pytest

from memory.errors import InvalidInputError
from memory.fusion import FLOOR, RankedList, Source, fuse, normalized, rrf_scores
from memory.models import Fact, ScoredFact
from memory.query_words import content_words
from memory.rag import HYBRID_WEIGHTS, _per_query, _ranked
from memory.search_input import check_top_k, clean_queries
from memory.settings import RagSettings
from tests.rag.builders import T0

RAG = RagSettings()


def scored(fact_id: str, score: float) -> ScoredFact:
    fact = Fact(
        fact_id=fact_id, agent_id="a1", scope="agent", content=f"fact {fact_id}", hash=fact_id,
        embedding_model="m", formed_at=T0, updated_at=T0,
    )  # fmt: skip
    return ScoredFact(fact=fact, score=score)


def ranked(source: Source, *items: tuple[str, float], query: int = 0) -> RankedList:
    return RankedList(query_index=query, source=source, facts=[scored(f, s) for f, s in items])


def order(lists: list[RankedList], min_rrf: float = 0.0) -> list[str]:
    return [f.hit.fact.fact_id for f in fuse(lists, k=60, weights=HYBRID_WEIGHTS, min_rrf=min_rrf)]


# ---------------------------------------------------------------- classic RRF (the gate)


def test_rrf_is_the_sum_of_reciprocal_ranks_over_lists() -> None:
    lists = [ranked("vector", ("a", 0.9), ("b", 0.8)), ranked("text", ("b", 7.0), ("c", 2.0))]

    scores = rrf_scores(lists, k=60)

    assert scores == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62})


def test_the_002_threshold_keeps_the_first_six_of_one_list_or_anything_two_lists_agree_on() -> None:
    alone = [ranked("text", *((f"t{i}", 10.0 - i) for i in range(1, 11)))]
    assert [f for f, s in rrf_scores(alone, RAG.rrf_k).items() if s >= RAG.rrf_score_threshold] == [
        f"t{i}" for i in range(1, 7)
    ]
    deep = [ranked("text", *((f"t{i}", 100.0 - i) for i in range(1, 71)))]
    both = [*deep, ranked("vector", *((f"t{i}", 1 - i / 100) for i in range(70, 0, -1)))]
    assert all(s >= RAG.rrf_score_threshold for s in rrf_scores(both, RAG.rrf_k).values())


def test_the_gate_drops_candidates_below_the_rrf_threshold() -> None:
    lists = [ranked("text", *((f"t{i}", 20.0 - i) for i in range(1, 10)))]

    assert order(lists, min_rrf=0.015) == [f"t{i}" for i in range(1, 7)]
    assert order(lists, min_rrf=0.0) == [f"t{i}" for i in range(1, 10)]


# ---------------------------------------------------------------- ranking of the survivors


def test_min_max_normalisation_maps_best_to_one_and_worst_to_the_floor() -> None:
    facts = [scored("a", 9.0), scored("b", 6.0), scored("c", 3.0)]

    # The worst candidate passed its gate: it keeps a small share, never 0 ("score 0.000").
    assert normalized(facts) == pytest.approx({"a": 1.0, "b": (1 + FLOOR) / 2, "c": FLOOR})
    assert FLOOR > 0
    assert normalized([scored("a", 0.7), scored("b", 0.7)]) == {"a": 1.0, "b": 1.0}
    assert normalized([]) == {}


def test_facts_are_deduplicated_and_agreement_of_both_lists_ranks_first() -> None:
    lists = [
        ranked("vector", ("v-only", 0.9), ("both", 0.8), ("v-low", 0.1)),
        ranked("text", ("t-only", 9.0), ("both", 8.0), ("t-low", 1.0)),
    ]

    fused = fuse(lists, k=60, weights=HYBRID_WEIGHTS, min_rrf=0.0)

    ids = [f.hit.fact.fact_id for f in fused]
    assert ids[0] == "both"
    assert sorted(ids) == sorted(set(ids))
    share = 1 - FLOOR  # min-max into [FLOOR, 1]
    expected = 0.4 * (1 - share * 0.1 / 0.8) + 0.6 * (1 - share * 1 / 8)
    assert fused[0].score == pytest.approx(expected)
    assert all(0.0 < f.score <= 1.0 for f in fused)


def test_the_text_list_weighs_more_than_the_vector_list() -> None:
    lists = [ranked("vector", ("v", 0.9), ("x", 0.1)), ranked("text", ("t", 9.0), ("y", 1.0))]

    assert order(lists)[:2] == ["t", "v"]


def test_a_single_method_scores_its_best_candidate_one() -> None:
    lists = [ranked("vector", ("a", 0.9), ("b", 0.5)), ranked("vector", ("c", 0.8), query=1)]

    fused = fuse(lists, k=60, weights=HYBRID_WEIGHTS, min_rrf=0.0)

    assert {f.hit.fact.fact_id: f.score for f in fused} == pytest.approx(
        {"a": 1.0, "c": 1.0, "b": FLOOR}
    )


def test_a_fact_takes_its_best_query_not_the_sum_over_queries() -> None:
    # 'half' is middling for both queries; 'answer' is query 1's best match.
    lists = [
        ranked("text", ("top0", 10.0), ("half", 5.0), ("low0", 0.0), query=0),
        ranked("text", ("answer", 10.0), ("half", 5.0), ("low1", 0.0), query=1),
    ]

    assert order(lists)[:3] == ["answer", "top0", "half"]  # equal scores: by fact id


def test_empty_lists_fuse_to_nothing() -> None:
    assert fuse([], k=60, weights=HYBRID_WEIGHTS, min_rrf=0.015) == []
    assert order([ranked("vector"), ranked("text")]) == []


# ---------------------------------------------------------------- queries and top_k


def test_queries_are_stripped_and_deduplicated_case_insensitively() -> None:
    assert clean_queries(["  Alice's email ", "alice's EMAIL", "budget"], RAG) == [
        "Alice's email",
        "budget",
    ]


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        ([], "1 to 3 queries, got 0"),
        (["a", "b", "c", "d"], "1 to 3 queries, got 4"),
        (["a", "A", "b", "B"], "1 to 3 queries, got 4"),  # as given: the schema's maxItems
        (["ok", "   "], "query 2 is empty"),
        (["x" * 2001], "longer than 2000 characters"),
        ("just a string", "a list of strings"),
    ],
)
def test_bad_queries_are_refused_with_a_clear_message(queries: list[str], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        clean_queries(queries, RAG)


def test_top_k_defaults_and_must_stay_within_bounds() -> None:
    assert check_top_k(None, RAG) == 10
    assert check_top_k(1, RAG) == 1  # 002 gives top_k no floor
    assert check_top_k(25, RAG) == 25
    for bad in (26, 0, -1):
        with pytest.raises(InvalidInputError, match="top_k must be between 1 and 25"):
            check_top_k(bad, RAG)


def test_content_words_drop_stop_words_and_contraction_fragments() -> None:
    assert (
        content_words("When did Caroline's sister move to Berlin?") == "Caroline sister move Berlin"
    )
    assert content_words("What is it?") == "What is it"  # nothing left: keep every word
    assert content_words("  ") == ""


def test_per_query_top_k_keeps_a_fact_only_the_queries_together_let_through() -> None:
    """The RRF gate sums over every query's lists: a fact two queries agree on passes it (2/67)
    though neither alone would (1/67 < 0.015). Each query's own top_k must not drop it (the
    review of the per-query top_k)."""
    q0 = RankedList(0, "vector", [*(scored(f"a{i}", 0.9 - i / 100) for i in range(1, 7)), scored("x", 0.8)])  # fmt: skip
    q1 = RankedList(1, "vector", [*(scored(f"b{i}", 0.9 - i / 100) for i in range(1, 7)), scored("x", 0.8)])  # fmt: skip
    gate = RagSettings().rrf_score_threshold
    fused = _ranked([q0, q1], RAG, gate, frozenset())
    assert "x" in [f.hit.fact.fact_id for f in fused]
    best = _per_query(fused, [q0, q1], RAG, ["q zero", "q one"], 25, by_identifier=True)
    assert [f.hit.fact.fact_id for f in best] == [f.hit.fact.fact_id for f in fused]
