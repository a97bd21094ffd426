"""pieces.over_bound: the facts of a message's pieces that the window's bounds leave out, which
FormMemories counts in its summary and metric. A loss, not what the filters drop: a fact said in
two pieces is kept once and is no loss."""

from __future__ import annotations

from memory.pipeline import pieces
from memory.pipeline.slices import merge_facts
from memory.pipeline.types import ExtractedFactsResult, NewFact


def _leaf(*texts: str) -> ExtractedFactsResult:
    return ExtractedFactsResult(
        facts=[NewFact(index=i, content=t, scope="user") for i, t in enumerate(texts)]
    )


def test_a_fact_said_in_two_pieces_is_no_loss() -> None:
    leaves = [_leaf("Alice's locker 1 code is 4101", "Bob is 40"), _leaf("Bob is 40")]
    kept = pieces.merged(leaves)
    assert len(kept.facts) == 2 and kept.dropped == 1  # the repeat, in the filters' count
    assert pieces.over_bound(leaves, kept) == 0


def test_facts_past_the_bound_of_facts_are_counted() -> None:
    leaves = [
        _leaf(*[f"Alice's locker {i} code is {4100 + i}" for i in range(n, n + 40)])
        for n in range(0, 400, 40)
    ]
    kept = pieces.merged(leaves)
    assert len(kept.facts) == pieces.MAX_DENSE_FACTS
    assert pieces.over_bound(leaves, kept) == 400 - pieces.MAX_DENSE_FACTS
    assert pieces.bound_reached(kept) == "facts"


def test_facts_past_the_bound_of_text_are_counted() -> None:
    """Long facts in a script of three bytes a character fill MAX_DENSE_BYTES well before
    MAX_DENSE_FACTS facts."""
    text = "東" * 390
    leaves = [_leaf(*[f"{i:03d} {text}" for i in range(n, n + 40)]) for n in range(0, 200, 40)]
    kept = pieces.merged(leaves)
    assert len(kept.facts) < 200 and len(kept.facts) < pieces.MAX_DENSE_FACTS
    assert pieces.over_bound(leaves, kept) == 200 - len(kept.facts)
    assert pieces.bound_reached(kept) == "text"


def test_the_slices_of_older_runs_count_past_their_own_bound() -> None:
    """Before DENSE_MESSAGES, a long message's slices kept facts.max_per_formation together
    (each slice's answer says it): the rest is a loss, counted the same way."""
    leaves = [
        _leaf(*[f"Alice's locker {i} code is {4100 + i}" for i in range(n, n + 30)]).model_copy(
            update={"max_facts": 40}
        )
        for n in (0, 30, 60)
    ]
    kept = merge_facts(leaves)
    assert len(kept.facts) == 40
    assert pieces.over_bound(leaves, kept) == 50
    assert pieces.bound_reached(kept) == "facts"
