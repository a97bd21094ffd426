"""Dedup decisions that need no model (issue #22: decisions a small model can make).

Before the batched ADD / UPDATE / DELETE / NONE call, these cases are decided here:

- a new fact with no similar stored fact is ADDed (nothing to compare it with), and a candidate
  that names another thing by a number or code before its verb ("room 204" / "room 205", "order
  A-1" / "order A-2") is no candidate at all: the two are never one fact, whatever a model says
  (a small model answers UPDATE for such pairs: tests/realmodel/test_identifier_answers.py);
- a new fact that states a candidate's text again is NONE: the same words, once case, punctuation,
  whitespace and the articles "a", "an", "the" are set aside ("The user lives in Berlin." repeats
  "User lives in Berlin"). What a reader would tell apart is never set aside
  (memory/fact_words.py): a sign, a currency, "%", "#" or a suffix that changes a value ("-18" /
  "18", "$50,000" / "€50,000", "A+" / "A-", "C" / "C++"), the letter case of a code ("Tr0ub4dor"
  / "tr0ub4dor"), an "A" that is a value and no article ("an A in physics");
- a new fact that states a candidate's text again but for the letter case of a code ("QX7Bz" /
  "QX7BZ", "Tr0ub4dor" / "tr0ub4dor") is an UPDATE of it: the same thing with a new value, told
  by nothing a model reads more surely than the rule (a model's NONE would drop the new value, an
  ADD keep both codes valid side by side, or, beside a fact stored before codes kept their case
  in the store's key, be taken by the store for that fact: memory/ids.py).

Only the rest goes to the model, which then compares fewer facts in a shorter prompt.

Why no cosine bound for "near-exact": bench/duplicate_bound.py measured it. With the default
embedder (MiniLM) a correction that changes one number or name scores as high as a restatement
("The vendor contract deadline is January 24, 2027." → "… January 31, 2027." 0.993, "The Mars
Festival opens on March 15 …" → "March 22 …" 0.994), while restatements score from 0.896 up. A
bound above every correction (1.02) catches no restatement; any lower one would drop corrections
as duplicates, the one mistake dedup must never make. So similarity only selects the candidates;
the rule decides on the words, and a restatement in other words is left to the model.
"""

from __future__ import annotations

from memory.fact_words import words as words  # re-exported: the rule compares these
from memory.llm.fact_decisions import numbered_apart
from memory.pipeline.types import CandidatesResult, Decision, NewFact, SimilarFact

# Marks a decision made here; the formation summary counts decisions by rule and by model with it.
RULE = "rule"
NO_CANDIDATE = f"{RULE}: no similar fact"
SAME_TEXT = f"{RULE}: states a stored fact again"
CODE_CASE = f"{RULE}: a code of the stored fact in another letter case"
# A model's UPDATE, DELETE or NONE the rules refused (dedup.resolve): the fact is ADDed instead.
REFUSED = f"{RULE}: refused the model's"


def predecide(
    facts: list[NewFact], candidates: CandidatesResult
) -> tuple[list[Decision], dict[int, list[SimilarFact]]]:
    """(the decisions made by rule, the facts left for the model with the candidates it may
    compare each with), in the facts' order."""
    decided: list[Decision] = []
    contested: dict[int, list[SimilarFact]] = {}
    for fact in facts:
        similar = [
            c
            for c in candidates.by_new_index.get(fact.index, [])
            if not numbered_apart(fact.content, c.content)
        ]
        if not similar:
            decided.append(
                Decision(
                    new_index=fact.index,
                    event="ADD",
                    final_text=fact.content,
                    reasoning=NO_CANDIDATE,
                )
            )
            continue
        said = words(fact.content)
        same = next((c for c in similar if said and words(c.content) == said), None)
        if same is not None:
            decided.append(
                Decision(
                    new_index=fact.index,
                    event="NONE",
                    existing_id=same.fact_id,
                    expected_version=same.version,
                    reasoning=SAME_TEXT,
                )
            )
            continue
        folded = _folded(said)
        recased = next((c for c in similar if said and _folded(words(c.content)) == folded), None)
        if recased is None:
            contested[fact.index] = similar
            continue
        decided.append(
            Decision(
                new_index=fact.index,
                event="UPDATE",
                existing_id=recased.fact_id,
                expected_version=recased.version,
                final_text=fact.content,
                reasoning=CODE_CASE,
            )
        )
    return decided, contested


def _folded(said: tuple[str, ...]) -> tuple[str, ...]:
    """Words compared with codes case-folded too: equal, two texts differ in a code's case only."""
    return tuple(w.casefold() for w in said)


def by_rule(decision: Decision) -> bool:
    return decision.reasoning.startswith(f"{RULE}:")


def refused(decision: Decision) -> bool:
    return decision.reasoning.startswith(REFUSED)
