"""The checks that stand between a model's output and the store."""

from __future__ import annotations

import pytest

from memory.errors import InvalidModelOutputError
from memory.pipeline.consolidation import checked_blob
from memory.pipeline.dedup import resolve
from memory.pipeline.types import NewFact, SimilarFact
from memory.pipeline.usage import words
from memory.prompts.consolidate import ConsolidatedSection, ConsolidatedSections
from memory.prompts.decide_facts import FactDecision
from tests.fakes import consolidated

NEW = [
    NewFact(index=0, content="Alice works at Acme as CTO", scope="user"),
    NewFact(index=1, content="Bob turned 40 years old", scope="user"),
]
EXISTING = [
    SimilarFact(fact_id="f_a", content="Alice works at Acme", version=3, similarity=0.9),
    SimilarFact(fact_id="f_b", content="Bob is 40 years old", version=1, similarity=0.8),
]
OFFERED = {0: {0}, 1: {1}}
# Two statements of one fact, the second correcting the first.
CORRECTED = [NEW[0], NewFact(index=1, content="Alice works at Globex", scope="user")]


def d(new: int, event: str, existing: int | None = None, text: str | None = None) -> FactDecision:
    return FactDecision(new_fact_index=new, event=event, existing_index=existing, merged_text=text)


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
        [d(0, "ADD", None, "x"), d(5, "ADD", None, "y")],  # unknown new fact
        [d(0, "ADD", None, "x"), d(0, "ADD", None, "y")],  # two decisions for one fact
        [d(0, "ADD", None, "x")],  # a fact left without a decision
    ],
    ids=[
        "unknown-new",
        "twice",
        "missing",
    ],
)
def test_resolve_rejects_what_it_would_have_to_guess(decisions: list[FactDecision]) -> None:
    with pytest.raises(InvalidModelOutputError):
        resolve(decisions, NEW, EXISTING, OFFERED)


@pytest.mark.parametrize("event", ["UPDATE", "DELETE", "NONE"])
@pytest.mark.parametrize(
    ("named", "why"),
    [
        (None, "it names no stored fact"),
        (1, "existing index 1 is not a candidate of this new fact"),  # offered to new fact 1
        (9, "existing index 9 is not a candidate of this new fact"),  # shown to nobody
    ],
)
def test_a_change_naming_no_candidate_keeps_the_new_fact(
    event: str, named: int | None, why: str
) -> None:
    """The 1.5B model answered UPDATE with existing_index null for 23 of 144 LoCoMo decisions, or
    named a fact not offered, and the same again when retried hotter; the fallback then added the
    whole batch undecided. Now only that new fact is kept as said, nothing else is touched, and
    the other decision stands."""
    out = resolve([d(0, event, named, "Alice is CTO"), d(1, "NONE", 1)], NEW, EXISTING, OFFERED)
    assert [(x.event, x.existing_id, x.final_text) for x in out] == [
        ("ADD", None, "Alice works at Acme as CTO"),
        ("NONE", "f_b", None),
    ]
    assert out[0].reasoning == f"rule: refused the model's {event}: {why}"


@pytest.mark.parametrize("event", ["UPDATE", "DELETE", "NONE"])
def test_a_change_of_a_fact_that_says_nothing_in_common_is_refused(event: str) -> None:
    """Seen on a real 1.5B model (docs/local_models.md): "the total budget was raised" UPDATEd
    the festival's opening date. The budget is added beside it; the other decision stands."""
    new = [
        NewFact(
            index=0, content="The total budget for the Mars Festival is $70,000.", scope="user"
        ),
        NEW[0].model_copy(update={"index": 1}),
    ]
    existing = [
        SimilarFact(
            fact_id="f_open",
            content="The Mars Festival opens on March 15, 2027 in Lisbon.",
            version=2,
            similarity=0.49,
        ),
        EXISTING[0],
    ]
    out = resolve(
        [d(0, event, 0, "The Mars Festival budget is $70,000"), d(1, "UPDATE", 1)],
        new,
        existing,
        {0: {0}, 1: {1}},
    )
    assert [(x.event, x.existing_id, x.final_text) for x in out] == [
        ("ADD", None, "The total budget for the Mars Festival is $70,000."),
        ("UPDATE", "f_a", "Alice works at Acme as CTO"),
    ]
    assert out[0].reasoning == f"rule: refused the model's {event} of f_open: nothing in common"


def test_a_restatement_shares_its_value_so_its_none_stands() -> None:
    """A number in common is evidence of a restatement (NONE), not of a correction (UPDATE)."""
    new = [NewFact(index=0, content="Alice was born on March 3.", scope="user")]
    birthday = SimilarFact(
        fact_id="f_b", content="Alice's birthday is on March 3.", version=1, similarity=0.8
    )
    [none] = resolve([d(0, "NONE", 0)], new, [birthday], {0: {0}})
    [update] = resolve([d(0, "UPDATE", 0)], new, [birthday], {0: {0}})
    assert (none.event, none.existing_id) == ("NONE", "f_b")
    assert (update.event, update.existing_id) == ("ADD", None)


def test_two_changes_of_one_existing_fact_apply_in_message_order() -> None:
    """Issue #12 case 1: a correction of a correction. Both change fact f_a, read at version 3;
    the commit chains them (the later wins), so neither is an error."""
    offered = {0: {0}, 1: {0}}
    out = resolve([d(1, "UPDATE", 0), d(0, "UPDATE", 0)], CORRECTED, EXISTING, offered)
    assert [
        (x.new_index, x.event, x.existing_id, x.expected_version, x.final_text) for x in out
    ] == [
        (0, "UPDATE", "f_a", 3, "Alice works at Acme as CTO"),
        (1, "UPDATE", "f_a", 3, "Alice works at Globex"),
    ]


def test_only_the_last_change_of_one_fact_retires_it() -> None:
    offered = {0: {0}, 1: {0}}
    first_deletes = resolve([d(0, "DELETE", 0), d(1, "UPDATE", 0)], CORRECTED, EXISTING, offered)
    assert [(x.event, x.existing_id) for x in first_deletes] == [
        ("UPDATE", "f_a"),
        ("UPDATE", "f_a"),
    ]
    last_deletes = resolve([d(0, "UPDATE", 0), d(1, "DELETE", 0)], CORRECTED, EXISTING, offered)
    assert [(x.event, x.existing_id) for x in last_deletes] == [
        ("UPDATE", "f_a"),
        ("DELETE", "f_a"),
    ]


def test_without_a_merged_text_the_new_fact_is_stored_as_said() -> None:
    out = resolve(
        [d(0, "UPDATE", 0), d(1, "DELETE", 1, "ignored: a DELETE stores the new fact")],
        NEW,
        EXISTING,
        OFFERED,
    )
    assert [x.final_text for x in out] == ["Alice works at Acme as CTO", "Bob turned 40 years old"]


@pytest.mark.parametrize(
    ("merged", "why"),
    [
        ("Alice is CTO of Acme. (candidate for new facts 0)", "copies"),
        ("Alice is CTO of Acme <existing_memories>", "copies"),
        ("Alice is CTO of Acme; existing 0 says so too", "copies"),
        ("Alice is CTO " * 10, "over the limit"),
    ],
    ids=["candidate-note", "tag", "index", "too-long"],
)
def test_a_merged_text_that_echoes_the_prompt_or_runs_on_is_rejected(merged: str, why: str) -> None:
    with pytest.raises(InvalidModelOutputError, match=why):
        resolve([d(0, "UPDATE", 0, merged), d(1, "NONE", 1)], NEW, EXISTING, OFFERED, max_words=20)


def test_a_merge_may_be_as_long_as_the_new_fact_formation_kept() -> None:
    """Formation keeps a fact over the word limit (it is what was said); the decision that
    carries it over its older version must not be refused for the same length (review)."""
    long = (
        "Alice works at Acme as CTO since 2024 and leads the robotics team, the hiring plan, the "
        "budget of the Lisbon office and the vendor contracts of the Mars festival in July"
    )
    new = [NewFact(index=0, content=long, scope="user"), NEW[1]]
    out = resolve([d(0, "UPDATE", 0, long), d(1, "NONE", 1)], new, EXISTING, OFFERED, max_words=20)
    assert out[0].event == "UPDATE" and out[0].final_text == long


def test_the_blob_is_written_from_the_sections_with_the_next_version() -> None:
    answer = ConsolidatedSections(
        sections=[
            ConsolidatedSection(title=" [preferences] ", items=["- Likes tea", "Answers\nbriefly"]),
            ConsolidatedSection(title="", items=["Untitled point"]),
            ConsolidatedSection(title="Preferences", items=["likes TEA", "Uses vim"]),
            ConsolidatedSection(title="EMPTY", items=["  "]),
        ]
    )
    # "likes TEA" repeats "Likes tea": kept once, the later (newer) one, at its place.
    assert checked_blob(answer, next_version=2, word_limit=20, tolerance=0.1) == (
        "VERSION: 2\n[PREFERENCES]\n- Answers briefly\n- likes TEA\n- Uses vim\n- Untitled point"
    )


@pytest.mark.parametrize(
    ("items", "why"),
    [([], "no items"), (["", " - "], "no items"), (["w " * 30], "over the limit")],
    ids=["none", "blank", "over-limit"],
)
def test_an_invalid_answer_is_refused(items: list[str], why: str) -> None:
    answer = ConsolidatedSections(sections=[ConsolidatedSection(title="NOTES", items=items)])
    with pytest.raises(InvalidModelOutputError, match=why):
        checked_blob(answer, next_version=2, word_limit=20, tolerance=0.1)


def test_the_word_limit_has_a_small_tolerance() -> None:
    # VERSION: 2 / [NOTES] / - and 18 words: 22 words ≤ 20 × 1.1
    answer = ConsolidatedSections(sections=[ConsolidatedSection(title="NOTES", items=["w " * 18])])
    assert checked_blob(answer, next_version=2, word_limit=20, tolerance=0.1)


# "She is travelling to Tokyo next month and wants every answer in simplified Chinese": 44
# characters, one whitespace-separated "word".
CHINESE = "她下个月要去东京出差，需要我们帮她预订靠近会场的酒店，并且希望所有的回答都用简体中文写。"


def test_a_blob_in_a_script_without_spaces_counts_each_character_as_a_word() -> None:
    """A user blob's limit is 300 words: in Chinese, 300 characters (about a token each), not
    300 paragraphs of them (it took 60,000 characters, put into every later prompt)."""
    assert words(CHINESE) == len(CHINESE) and words(f"Alice: {CHINESE} OK") == 2 + len(CHINESE)
    one = ConsolidatedSections(sections=[ConsolidatedSection(title="NOTES", items=[CHINESE])])
    assert checked_blob(one, next_version=2, word_limit=300, tolerance=0.1)
    many = ConsolidatedSections(
        sections=[ConsolidatedSection(title="NOTES", items=[f"{CHINESE}{i}" for i in range(10)])]
    )
    with pytest.raises(InvalidModelOutputError, match="over the limit of 330"):
        checked_blob(many, next_version=2, word_limit=300, tolerance=0.1)


MERGED = ["Alice wants code samples in Rust", "Alice dislikes long preambles"]


def test_a_draft_repeating_the_prompts_instructions_is_refused() -> None:
    """Stored, the rules would stand in every prompt as the user's memory, and the reflections
    the draft replaced would be marked absorbed: lost."""
    echo = consolidated(
        "Preserve important existing insights; integrate the new information.",
        "Resolve contradictions: newer information wins. Drop what is outdated.",
        "Focus on preferences, directives and interaction style: how should the agent "
        "interact with this user?",
    )
    with pytest.raises(InvalidModelOutputError, match="repeats the prompt's instructions"):
        checked_blob(echo, next_version=1, word_limit=300, tolerance=0.1, merged=MERGED)
    # Beside the memory it copies, too: what the draft adds is judged.
    padded = consolidated("Alice lives in Oslo", *echo.sections[0].items)
    with pytest.raises(InvalidModelOutputError, match="repeats the prompt's instructions"):
        checked_blob(
            padded, next_version=2, word_limit=300, tolerance=0.1,
            merged=["Alice lives in Oslo", *MERGED],
        )  # fmt: skip


def test_a_draft_in_the_instructions_words_but_grounded_in_the_reflections_is_kept() -> None:
    # "prefers", "short", "answers", "agent", "always" are the prompt's words too.
    answer = consolidated(
        "Alice prefers short answers without preambles",
        "The agent should always give code samples in Rust",
    )
    assert checked_blob(answer, next_version=1, word_limit=300, tolerance=0.1, merged=MERGED)


def test_a_code_corrected_in_another_case_reaches_the_blob_and_a_repeat_keeps_the_newer() -> None:
    """ "Tr0ub4dor" and "tr0ub4dor" are two passwords (memory.ids.normalize_text): the correction
    was dropped as a repeat of the old one, its reflection absorbed."""
    answer = consolidated(
        "Alice's wifi password is Tr0ub4dor",
        "Alice likes tea",
        "Alice's wifi password is tr0ub4dor",
        "alice likes tea.",
    )
    assert checked_blob(answer, next_version=2, word_limit=300, tolerance=0.1) == (
        "VERSION: 2\n[NOTES]\n- Alice's wifi password is Tr0ub4dor\n"
        "- Alice's wifi password is tr0ub4dor\n- alice likes tea."
    )


def test_an_update_whose_merge_says_nothing_of_the_new_fact_is_refused() -> None:
    """Seen on the 1.5B model with LoCoMo (tests/realmodel/data/decide-locomo-narrowed.jsonl): it
    UPDATEd "Jon plans to start a dance studio …" for "Jon is looking for the right type of
    flooring for his dance studio" with the text of another fact it was shown. A merge that
    keeps something of what was said stands."""
    new = [
        NewFact(index=0, content="Jon is looking for flooring for his dance studio.", scope="user")
    ]
    plans = SimilarFact(
        fact_id="f_p", content="Jon plans to start a dance studio.", version=1, similarity=0.7
    )
    other = "Jon plans to perform at a nearby festival in February 2023."
    [refused] = resolve([d(0, "UPDATE", 0, other)], new, [plans], {0: {0}})
    assert (refused.event, refused.existing_id, refused.final_text) == ("ADD", None, new[0].content)
    assert refused.reasoning == (
        "rule: refused the model's UPDATE of f_p: its merged text says nothing the new fact says"
    )
    merge = "Jon plans to start a dance studio and is looking for its flooring."
    [kept] = resolve([d(0, "UPDATE", 0, merge)], new, [plans], {0: {0}})
    assert (kept.event, kept.existing_id, kept.final_text) == ("UPDATE", "f_p", merge)
