"""Contract: vector, text and recency searches over facts, and touch_facts (both backends)."""

from __future__ import annotations

import pytest

from memory.errors import EmbeddingMismatchError
from memory.formation_commit import FactInvalidate, FactUpdate
from memory.models import FactFilter
from memory.store.base import MemoryStore
from tests.store.builders import Former, add, at, unit, user_filter, vec

# Five facts with the same vector and the same word, in every corner of the filter.
_CORNERS = {
    "a1-u1": ("a1", "user", "u1"),
    "a1-u2": ("a1", "user", "u2"),
    "a1-agent": ("a1", "agent", None),
    "a2-u1": ("a2", "user", "u1"),
    "a2-agent": ("a2", "agent", None),
}


async def _corners(store: MemoryStore) -> None:
    for agent_id in ("a1", "a2"):
        former = await Former(store, f"s-{agent_id}", agent_id).start(messages=2)
        await former.form(
            *(
                add(name, f"{name} enjoys sailing", unit(1, 0), scope=scope, user_id=user)
                for name, (owner, scope, user) in _CORNERS.items()
                if owner == agent_id
            )
        )


_FILTERS = [
    (user_filter("a1", "u1"), {"a1-u1", "a1-agent"}),
    (user_filter("a1", "u1", agent_scope=False), {"a1-u1"}),
    (user_filter("a1", None), {"a1-agent"}),
    (user_filter("a1", "u3"), {"a1-agent"}),
    (user_filter("a2", "u1"), {"a2-u1", "a2-agent"}),
    (user_filter("a2", "u2", agent_scope=False), set()),
]


# ---------------------------------------------------------------- vector search


async def test_vector_search_scores_are_cosines_best_first(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("same", "Fact same", unit(1, 0)),
        add("close", "Fact close", unit(0.6, 0.8)),
        add("orthogonal", "Fact orthogonal", unit(0, 1)),
        add("opposite", "Fact opposite", unit(-1, 0)),
    )

    hits = await store.vector_search(vec(2, 0), user_filter(), limit=10)  # not unit: cosine anyway

    assert [h.fact.fact_id for h in hits] == ["same", "close", "orthogonal", "opposite"]
    assert [h.score for h in hits] == pytest.approx([1.0, 0.6, 0.0, -1.0], abs=1e-5)
    top = await store.vector_search(vec(1, 0), user_filter(), limit=2)
    assert [h.fact.fact_id for h in top] == ["same", "close"]
    above = await store.vector_search(vec(1, 0), user_filter(), limit=10, min_score=0.5)
    assert [h.fact.fact_id for h in above] == ["same", "close"]


@pytest.mark.parametrize(("flt", "expected"), _FILTERS)
async def test_vector_search_sees_only_the_filter(
    store: MemoryStore, flt: FactFilter, expected: set[str]
) -> None:
    await _corners(store)

    hits = await store.vector_search(vec(1, 0), flt, limit=10)

    assert {h.fact.fact_id for h in hits} == expected


async def test_vector_search_skips_invalidated_facts(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("old", "Drives a van", unit(1, 0)))
    await former.form(
        add("new", "Drives a truck", unit(0.8, 0.6)),
        FactInvalidate(fact_id="old", expected_version=1, replaced_by="new"),
    )

    hits = await store.vector_search(vec(1, 0), user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["new"]


async def test_vector_search_rejects_another_dimension(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Knits", unit(1, 0)))

    with pytest.raises(EmbeddingMismatchError):
        await store.vector_search(vec(1, 0)[:3], user_filter(), limit=5)


async def test_vector_searches_answer_each_query_as_vector_search_does(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("same", "Fact same", unit(1, 0)),
        add("close", "Fact close", unit(0.6, 0.8)),
        add("orthogonal", "Fact orthogonal", unit(0, 1)),
    )
    queries = [vec(1, 0), vec(0, 1), vec(-1, 0), vec(1, 0)]

    many = await store.vector_searches(queries, user_filter(), limit=2, min_score=-0.5)

    one_by_one = [
        await store.vector_search(q, user_filter(), limit=2, min_score=-0.5) for q in queries
    ]
    assert [[(h.fact.fact_id, round(h.score, 5)) for h in hits] for hits in many] == [
        [(h.fact.fact_id, round(h.score, 5)) for h in hits] for hits in one_by_one
    ]
    assert [h.fact.fact_id for h in many[1]] == ["orthogonal", "close"]
    assert many[2] == [] or all(h.score >= -0.5 for h in many[2])
    assert await store.vector_searches([], user_filter(), limit=2) == []
    with pytest.raises(EmbeddingMismatchError):
        await store.vector_searches([vec(1, 0), vec(1, 0)[:3]], user_filter(), limit=2)


# ---------------------------------------------------------------- text search


async def test_text_search_ranks_the_better_match_first(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("both", "Prefers green tea in the morning", unit(1, 0)),
        add("one", "Drinks black tea", unit(0, 1)),
        add("none", "Collects old maps", unit(0, 0, 1)),
    )

    hits = await store.text_search("green tea", user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["both", "one"]
    assert hits[0].score > hits[1].score >= 0
    assert [
        h.fact.fact_id for h in await store.text_search("green tea", user_filter(), limit=1)
    ] == ["both"]


@pytest.mark.parametrize(("flt", "expected"), _FILTERS)
async def test_text_search_sees_only_the_filter(
    store: MemoryStore, flt: FactFilter, expected: set[str]
) -> None:
    await _corners(store)

    hits = await store.text_search("sailing", flt, limit=10)

    assert {h.fact.fact_id for h in hits} == expected


async def test_text_search_treats_query_syntax_as_words(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        add("foo", "Saw foo fighters live", unit(1, 0)),
        add("barbecue", "Hosts a barbecue", unit(0, 1)),
        add("maps", "Collects old maps", unit(0, 0, 1)),
    )

    hits = await store.text_search('"foo" OR bar* NEAR(', user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["foo"]
    for query in ['"', "*", "()", "NEAR(", " - ^ : ", ""]:
        assert await store.text_search(query, user_filter(), limit=10) == [], query


async def test_text_search_skips_invalidated_facts(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("old", "Studies piano", unit(1, 0)))
    await former.form(
        add("new", "Teaches piano", unit(0, 1)),
        FactInvalidate(fact_id="old", expected_version=1, replaced_by="new"),
    )

    hits = await store.text_search("piano", user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["new"]


async def test_text_search_follows_updates(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Plays the violin", unit(1, 0)))
    # A warm search first: whatever the backend keeps of a fact's text must follow the edit.
    assert [h.fact.fact_id for h in await store.text_search("violin", user_filter(), limit=5)] == [
        "f1"
    ]
    await former.form(
        FactUpdate(
            fact_id="f1", expected_version=1, content="Plays the cello", embedding=unit(1, 0)
        )
    )

    assert await store.text_search("violin", user_filter(), limit=5) == []
    [hit] = await store.text_search("cello", user_filter(), limit=5)
    assert (hit.fact.fact_id, hit.fact.version) == ("f1", 2)
    assert hit.score > 0  # scored on the new words, not on the old ones


async def test_text_search_ties_go_to_the_newer_fact(store: MemoryStore) -> None:
    """Equal scores (the same words, as often, in facts as long) rank the newer fact first on
    every backend, whatever the fact ids."""
    former = await Former(store).start()
    await former.form(add("aa-older", "Alice drinks tea", unit(1, 0)))
    await former.form(add("zz-newer", "Carol drinks tea", unit(0, 1)))
    await former.form(add("maps", "Collects old maps", unit(0, 0, 1)))
    await former.form(add("chess", "Plays chess", unit(0, 0, 0, 1)))

    hits = await store.text_search("tea", user_filter(), limit=10)

    assert [h.fact.fact_id for h in hits] == ["zz-newer", "aa-older"]
    assert hits[0].score == pytest.approx(hits[1].score) and hits[0].score > 0
    [top] = await store.text_search("tea", user_filter(), limit=1)
    assert top.fact.fact_id == "zz-newer"


async def test_text_search_hits_hold_a_query_word(store: MemoryStore) -> None:
    """A hit holds one of the query's words as the shared BM25 counts them (\\w+ words, so
    "cool_cat" is one word, and their Porter stems): its score is > 0. A fact an index matched by
    its own word split (FTS5 splits "cool_cat" in two) scores 0 and is no hit."""
    former = await Former(store).start()
    await former.form(
        add("handle", "Her handle is cool_cat", unit(1, 0)),
        add("maps", "Collects old maps", unit(0, 1)),
        add("chess", "Plays chess", unit(0, 0, 1)),
    )

    assert await store.text_search("cat", user_filter(), limit=10) == []
    hits = await store.text_search("cool_cat", user_filter(), limit=10)
    assert [h.fact.fact_id for h in hits] == ["handle"] and hits[0].score > 0


# ---------------------------------------------------------------- recency and access


async def test_recent_facts_newest_first_since_and_limit(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("t100", "Fact at 100", unit(1, 0)))  # formations at 100, 110, 120...
    await former.form(add("t110", "Fact at 110", unit(0, 1), scope="agent"))
    await former.form(add("t120", "Fact at 120", unit(0, 0, 1)))
    await former.form(add("other-user", "Fact of u2", unit(1, 1), user_id="u2"))
    await former.form(
        add("t140", "Fact at 140", unit(0, 0, 0, 1)),
        FactInvalidate(fact_id="t120", expected_version=1, replaced_by="t140"),
    )

    recent = await store.recent_facts(user_filter(), since=at(105), limit=10)
    assert [f.fact_id for f in recent] == ["t140", "t110"]
    capped = await store.recent_facts(user_filter(), since=at(0), limit=2)
    assert [f.fact_id for f in capped] == ["t140", "t110"]
    everything = await store.recent_facts(user_filter(), since=at(0), limit=10)
    assert [f.fact_id for f in everything] == ["t140", "t110", "t100"]


async def test_touch_facts_counts_accesses(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("f1", "Reads poetry", unit(1, 0)), add("f2", "Runs", unit(0, 1)))

    await store.touch_facts(["f1"], at(500))
    await store.touch_facts(["f1", "f2"], at(600))

    facts = {f.fact_id: f for f in await store.get_facts(["f1", "f2"])}
    assert (facts["f1"].access_count, facts["f1"].last_accessed_at) == (2, at(600))
    assert (facts["f2"].access_count, facts["f2"].last_accessed_at) == (1, at(600))
