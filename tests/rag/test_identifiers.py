"""The exact-identifier rule of search_facts, pure: which query tokens are identifiers, what the
text search is asked for them, which facts hold them, and the tier that ranks those first."""

from __future__ import annotations

import pytest

from memory.fusion import Fused, RankedList, merged, with_identifier_tier
from memory.identifiers import held, identifier_keys, identifiers, key, search_terms
from memory.models import Fact, ScoredFact
from memory.query_words import text_queries
from tests.rag.builders import T0


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("favourite number 4711", ("4711",)),
        ("What is the code of locker 7?", ("7",)),
        ("Where is order A-17?", ("a-17",)),
        ("Is flight LH400 late?", ("lh400",)),
        ("ticket #52-113 and v2.3.1", ("52-113", "v2.3.1")),
        ("the 4,711 invoice", ("4,711",)),
        ("my favourite number 2023", ("2023",)),  # a year only after "in", a month, a season
        ("When did John run the 5K?", ("5k",)),
    ],
)
def test_numbers_and_codes_that_name_a_thing_are_identifiers(
    query: str, expected: tuple[str, ...]
) -> None:
    assert identifiers(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "What did Maria do on May 3, 2023?",
        "What did Gina find on 1 February, 2023?",
        "What setback did Melanie face in October 2023?",
        "How many times has Melanie gone to the beach in 2023?",
        "Where did Caroline move from 4 years ago?",
        "How long ago was Caroline's 18th birthday?",
        "Is the meeting at 10:30 or at 7pm?",
        "Music of the 1990s",
        "What happened on 2023-05-01 and 3/5/2023?",
        "Did I go there 5 times?",
        "What are the names of Alice's 2 dogs?",
        "Which 2 restaurants did Alice recommend?",
        "How old are her 3 kids?",
        "What is my favourite colour?",
    ],
)
def test_dates_times_durations_and_words_are_not(query: str) -> None:
    assert identifiers(query) == ()
    assert len(text_queries(query)) == 1  # the content words alone


def test_the_text_search_is_asked_for_each_identifier_key_alone() -> None:
    # "A17" is indexed as "a17": its key. A multi-part token's parts alone ("17" of "A-17", the
    # groups of "4,711") would match too many facts (h210, h224): they are phrases instead.
    assert search_terms("Where is order A-17?") == "a17"
    assert search_terms("A17") == "a17"
    assert search_terms("flight LH400, ticket 52-113") == "lh400 52113"
    assert search_terms("55007") == "55007"
    assert search_terms("the 4,711 invoice") == "4711"
    assert search_terms("4711") == "4711"  # "4" would match too many facts
    assert search_terms("What is my favourite colour?") == ""
    # The other spellings as phrases ("4-711": "4" and "711" next to each other, as "4,711").
    assert text_queries("What is my favourite number 4711?") == [
        "favourite number 4711",
        "4711 4-711",
    ]
    assert text_queries("A-17") == ["17", "a17 a-17"]
    assert text_queries("417") == ["417"]  # one search when the words are the identifier


def test_a_fact_holds_an_identifier_by_its_key_whatever_the_joiners() -> None:
    wanted = identifier_keys(["Where is order A-17?", "favourite number 4711"])

    assert wanted == {"a17", "4711"}
    assert key("A-17") == key("a17") == key("A17")
    assert held("Order A17 ships on Monday", wanted) == 1
    assert held("My favourite number 4711 is 217; order a-17 too.", wanted) == 2
    assert held("Order B-17 and 47110 and locker 17", wanted) == 0  # no part or prefix matches
    assert held("anything", frozenset()) == 0


def test_a_number_inside_a_date_of_a_fact_holds_no_identifier() -> None:
    wanted = identifier_keys(["What is in room 2?"])

    assert wanted == {"2"}
    assert held("Alice visited Lisbon on 2 May 2023", wanted) == 0
    assert held("Alice moved on May 2, 2023", wanted) == 0
    assert held("Alice booked room 2 on 2 May 2023", wanted) == 1


def test_a_number_labelling_a_thing_stays_an_identifier_before_a_verb() -> None:
    assert identifiers("Is room 2 booked?") == ("2",)
    assert identifiers("Which gate does flight 12 leave from?") == ("12",)
    assert identifiers("Who has the 4711 tickets?") == ("4711",)  # 4 digits: a name, not a count


def fused(fact_id: str, content: str, score: float) -> Fused:
    fact = Fact(
        fact_id=fact_id, agent_id="a1", scope="agent", content=content, hash=fact_id,
        embedding_model="m", formed_at=T0, updated_at=T0,
    )  # fmt: skip
    return Fused(hit=ScoredFact(fact=fact, score=score), rrf=0.02, score=score)


def ids(items: list[Fused]) -> list[str]:
    return [f.hit.fact.fact_id for f in items]


def test_candidates_holding_the_identifier_rank_first_in_fused_order() -> None:
    # The vector list's head outscores the exact match, as MiniLM's does for near-identical facts.
    candidates = [
        fused("n18", "My favourite number 18 is 126.", 0.95),
        fused("n17-old", "My favourite number 17 was 9.", 0.9),
        fused("n19", "My favourite number 19 is 133.", 0.8),
        fused("n17", "My favourite number 17 is 119.", 0.6),
    ]

    tiered = with_identifier_tier(candidates, identifier_keys(["favourite number 17"]))

    assert ids(tiered) == ["n17-old", "n17", "n18", "n19"]
    assert [f.identifiers for f in tiered] == [1, 1, 0, 0]
    # A candidate moved up takes the best score it passed: the scores follow the order.
    assert [f.score for f in tiered] == [0.95, 0.95, 0.95, 0.8]


def test_more_identifiers_held_rank_higher() -> None:
    candidates = [
        fused("one", "Order A-17 ships Monday", 0.9),
        fused("both", "Order A-17 ships to locker 42", 0.5),
    ]

    tiered = with_identifier_tier(candidates, identifier_keys(["order A-17 locker 42"]))

    assert ids(tiered) == ["both", "one"]


def test_a_query_without_identifiers_keeps_the_fused_order() -> None:
    candidates = [fused("b", "Number 17 is 119", 0.9), fused("a", "Number 18 is 126", 0.8)]

    assert with_identifier_tier(candidates, identifier_keys(["my favourite number"])) == candidates


def test_a_querys_text_searches_fuse_as_one_list_at_each_facts_best_score() -> None:
    def scored(fact_id: str, score: float) -> ScoredFact:
        return ScoredFact(fact=fused(fact_id, "x", 0).hit.fact, score=score)

    words = RankedList(0, "text", [scored("a", 3.0), scored("b", 2.0)])
    exact = RankedList(0, "text", [scored("c", 9.0), scored("b", 2.5)])
    vector = RankedList(0, "vector", [scored("a", 0.7)])
    other = RankedList(1, "text", [scored("a", 1.0)])

    lists = merged([vector, words, exact, other])

    assert [(r.query_index, r.source) for r in lists] == [(0, "vector"), (0, "text"), (1, "text")]
    assert [(s.fact.fact_id, s.score) for s in lists[1].facts] == [
        ("c", 9.0),
        ("a", 3.0),
        ("b", 2.5),
    ]
