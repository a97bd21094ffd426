"""Dedup decisions made without a model: no candidate → ADD, the same words again → NONE, and
everything else (a correction, a restatement in other words) left to the model."""

from __future__ import annotations

import hashlib
import unicodedata

import pytest

from memory.ids import content_hash
from memory.pipeline.dedup import resolve
from memory.pipeline.predecide import by_rule, predecide, words
from memory.pipeline.types import CandidatesResult, Decision, NewFact, SimilarFact
from memory.prompts.decide_facts import FactDecision
from workflows.summary import FormationSummary


def _fact(index: int, content: str) -> NewFact:
    return NewFact(index=index, content=content, scope="user")


def _stored(fact_id: str, content: str) -> SimilarFact:
    return SimilarFact(fact_id=fact_id, content=content, version=3, similarity=0.99)


STORED = [
    _stored("f-berlin", "User lives in Berlin."),
    _stored("f-deadline", "The vendor contract deadline is January 24, 2027."),
]


def test_no_candidate_is_added_and_the_same_words_are_no_change() -> None:
    facts = [
        _fact(0, "Alice has a cat named Miso."),  # nothing similar stored
        _fact(1, "The user lives in  berlin"),  # the stored text again
        _fact(2, "The vendor contract deadline is January 31, 2027."),  # a correction
        _fact(3, "User resides in Berlin."),  # other words: the model decides
    ]
    candidates = CandidatesResult(by_new_index={1: STORED, 2: STORED, 3: STORED})

    decided, contested = predecide(facts, candidates)

    assert [(d.new_index, d.event, d.existing_id) for d in decided] == [
        (0, "ADD", None),
        (1, "NONE", "f-berlin"),
    ]
    assert decided[1].expected_version == 3 and decided[0].final_text == facts[0].content
    assert all(by_rule(d) for d in decided)
    assert list(contested) == [2, 3]
    assert contested[2] == STORED


def test_a_candidate_that_names_another_thing_is_never_offered() -> None:
    """Room 204 and room 205 are two rooms: a small model answers UPDATE for such a pair."""
    room_204 = SimilarFact(
        fact_id="f-204", content="Room 204 is booked for Friday.", version=1, similarity=0.97
    )
    facts = [_fact(0, "Room 205 is booked for Friday."), _fact(1, "Room 204 is booked for Monday.")]
    candidates = CandidatesResult(by_new_index={0: [room_204], 1: [room_204]})

    decided, contested = predecide(facts, candidates)

    assert [(d.new_index, d.event) for d in decided] == [(0, "ADD")]
    assert contested == {1: [room_204]}  # the same room, another day: the model decides


def test_words_keep_what_changes_a_fact() -> None:
    assert words("User's budget is $50,000.") == ("user's", "budget", "is", "$50,000")
    assert words("User is not vegetarian.") != words("User is vegetarian.")
    assert words("User was a nurse.") != words("User is a nurse.")
    assert words("The team meets at 10:00.") != words("The team meets at 11:00.")
    assert words("...") == ()


def test_the_formation_summary_counts_decisions_by_rule_and_by_model() -> None:
    summary = FormationSummary()
    decided, _ = predecide(
        [_fact(0, "User lives in Berlin"), _fact(1, "Alice has a cat.")],
        CandidatesResult(by_new_index={0: STORED}),
    )
    by_model = Decision(new_index=2, event="UPDATE", existing_id="f-deadline", final_text="x")
    degraded = Decision(new_index=3, event="ADD", final_text="y", reasoning="degraded: looped")

    summary.add_decisions([*decided, by_model, degraded])

    assert (summary.decisions_by_rule, summary.decisions_by_model) == (2, 1)
    memo = summary.memo()
    assert memo["decisions_by_rule"] == 2 and memo["decisions_by_model"] == 1
    assert "decisions_refused" not in memo  # none refused: the memo reads as it always did


def test_the_formation_summary_counts_the_models_changes_the_rule_refused() -> None:
    summary = FormationSummary()
    [refused] = resolve(
        [FactDecision(new_fact_index=0, event="UPDATE", existing_index=0, merged_text=None)],
        [_fact(0, "Gina appreciates Jon's help and support.")],
        [
            SimilarFact(
                fact_id="f-light",
                content="Gina found a place with great natural light.",
                version=1,
                similarity=0.7,
            )
        ],
        {0: {0}},
    )

    summary.add_decisions([refused])

    assert (refused.event, refused.existing_id) == ("ADD", None)
    assert (summary.decisions_by_rule, summary.decisions_by_model) == (1, 0)
    assert summary.decisions_refused == 1 and summary.memo()["decisions_refused"] == 1


@pytest.mark.parametrize(
    ("stored", "said"),
    [
        ("Alice's blood type is A+.", "Alice's blood type is A-."),
        ("Alice's blood type is O+.", "Alice's blood type is O-."),
        ("The freezer must stay at 18 degrees.", "The freezer must stay at -18 degrees."),
        ("Alice's account balance is $200.", "Alice's account balance is -$200."),
        ("The project budget is $50,000.", "The project budget is €50,000."),
        ("Alice mostly codes in C.", "Alice mostly codes in C++."),
        ("Alice mostly codes in C.", "Alice mostly codes in C#."),
        ("Alice's discount is 10%.", "Alice's discount is $10."),
    ],
)
def test_a_sign_a_currency_or_a_suffix_is_no_restatement(stored: str, said: str) -> None:
    """Audit finding 2: these pairs were "the same words" and the new value dropped by rule."""
    candidates = CandidatesResult(by_new_index={0: [_stored("f-old", stored)]})

    decided, contested = predecide([_fact(0, said)], candidates)

    assert (decided, list(contested)) == ([], [0])  # the model decides


def test_an_article_is_set_aside_and_a_grade_is_not() -> None:
    assert words("A friend of Alice is a nurse.") == words("Friend of Alice is nurse")
    assert words("Alice got an A in physics.") == words("Alice got A in physics")
    assert words("Alice got an A in physics.") != words("Alice got a B in physics.")
    assert words("Alice's blood type is A+") != words("Alice's blood type is")


def test_a_code_in_another_case_updates_the_fact_by_rule() -> None:
    """Audit finding 2: "Tr0ub4dor" and "tr0ub4dor" are two passwords; the second was dropped as
    the first's repeat. A capital of an ordinary word still says nothing."""
    stored = [
        _stored("f-wifi", "The office wifi password is Tr0ub4dor."),
        _stored("f-booking", "Alice's booking reference is QX7Bz."),
    ]
    facts = [
        _fact(0, "The office wifi password is tr0ub4dor."),
        _fact(1, "Alice's booking reference is QX7BZ."),
        _fact(2, "the office WIFI password is Tr0ub4dor"),
    ]
    candidates = CandidatesResult(by_new_index={0: stored, 1: stored, 2: stored})

    decided, contested = predecide(facts, candidates)

    assert [(d.event, d.existing_id, d.final_text) for d in decided] == [
        ("UPDATE", "f-wifi", facts[0].content),
        ("UPDATE", "f-booking", facts[1].content),
        ("NONE", "f-wifi", None),
    ]
    assert all(by_rule(d) for d in decided) and contested == {}


def test_the_exact_duplicate_key_keeps_a_codes_case_and_nothing_else_changes() -> None:
    """The store's key (memory/ids.py): two passwords in another case are two texts; a text
    without a code hashes as it did before codes kept their case."""
    assert content_hash("The wifi password is Tr0ub4dor") != content_hash(
        "The wifi password is tr0ub4dor"
    )
    assert content_hash("Booking QX7Bz.") != content_hash("Booking QX7BZ.")
    for text in ("The User lives in  BERLIN.", "Straße Ωμέγα ΣΑΣ!", "Alice's budget is $50,000"):
        legacy = " ".join(unicodedata.normalize("NFKC", text).casefold().split()).rstrip(".!;")
        assert content_hash(text) == hashlib.sha256(legacy.encode()).hexdigest()
