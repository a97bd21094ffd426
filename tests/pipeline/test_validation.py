"""The checks that stand between a model's output and the store."""

from __future__ import annotations

import pytest

from memory.errors import InvalidModelOutputError
from memory.pipeline.consolidation import validate_blob
from memory.pipeline.dedup import resolve
from memory.pipeline.types import NewFact, SimilarFact
from memory.prompts.decide_facts import FactDecision

NEW = [
    NewFact(index=0, content="Alice works at Acme as CTO", scope="user"),
    NewFact(index=1, content="Bob is 40", scope="user"),
]
EXISTING = [
    SimilarFact(fact_id="f_a", content="Alice works at Acme", version=3, similarity=0.9),
    SimilarFact(fact_id="f_b", content="Bob is 39", version=1, similarity=0.8),
]
OFFERED = {0: {0}, 1: {1}}


def d(new: int, event: str, existing: int | None = None, text: str | None = None) -> FactDecision:
    return FactDecision(
        new_fact_index=new, event=event, existing_index=existing, final_text=text, reasoning=""
    )


def test_resolve_maps_indices_back_to_ids_and_versions() -> None:
    out = resolve(
        [d(0, "UPDATE", 0, "Alice is CTO of Acme"), d(1, "NONE", 1)], NEW, EXISTING, OFFERED
    )
    assert [(x.event, x.existing_id, x.expected_version, x.final_text) for x in out] == [
        ("UPDATE", "f_a", 3, "Alice is CTO of Acme"),
        ("NONE", "f_b", 1, None),
    ]


@pytest.mark.parametrize(
    "decisions",
    [
        [d(0, "UPDATE", 1, "x"), d(1, "NONE", 1)],  # existing 1 was not offered for new fact 0
        [d(0, "DELETE", 9, "x"), d(1, "NONE", 1)],  # unknown existing index
        [d(0, "ADD", None, "x"), d(5, "ADD", None, "y")],  # unknown new fact
        [d(0, "ADD", None, "x"), d(0, "ADD", None, "y")],  # two decisions for one fact
        [d(0, "ADD", None, "x")],  # a fact left without a decision
        [d(0, "NONE", None), d(1, "NONE", 1)],  # NONE must name the fact it duplicates
    ],
    ids=[
        "not-offered",
        "unknown-existing",
        "unknown-new",
        "twice",
        "missing",
        "none-without-target",
    ],
)
def test_resolve_rejects_what_it_would_have_to_guess(decisions: list[FactDecision]) -> None:
    with pytest.raises(InvalidModelOutputError):
        resolve(decisions, NEW, EXISTING, OFFERED)


def test_two_changes_of_one_existing_fact_are_rejected() -> None:
    offered = {0: {0}, 1: {0}}
    with pytest.raises(InvalidModelOutputError, match="two decisions"):
        resolve([d(0, "UPDATE", 0, "x"), d(1, "DELETE", 0, "y")], NEW, EXISTING, offered)


def test_a_valid_blob_passes_trimmed() -> None:
    assert (
        validate_blob("  VERSION: 2\n[NOTES]\n- a  ", next_version=2, word_limit=20, tolerance=0.1)
        == "VERSION: 2\n[NOTES]\n- a"
    )


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("VERSION: 3\n- a", "VERSION: 2"),
        ("- a\n- b", "VERSION: 2"),
        ("VERSION: 2", "no content"),
        ("VERSION: 2\n" + "w " * 30, "over the limit"),
    ],
)
def test_an_invalid_blob_is_refused(text: str, why: str) -> None:
    with pytest.raises(InvalidModelOutputError, match=why):
        validate_blob(text, next_version=2, word_limit=20, tolerance=0.1)


def test_the_word_limit_has_a_small_tolerance() -> None:
    ok = "VERSION: 2\n" + "w " * 20  # 22 words ≤ 20 × 1.1
    assert validate_blob(ok, next_version=2, word_limit=20, tolerance=0.1)
