"""Dedup decisions that need no model (issue #22: decisions a small model can make).

Before the batched ADD / UPDATE / DELETE / NONE call, two cases are decided here:

- a new fact with no similar stored fact is ADDed (nothing to compare it with), and a candidate
  that names another thing by a number or code before its verb ("room 204" / "room 205", "order
  A-1" / "order A-2") is no candidate at all: the two are never one fact, whatever a model says
  (a small model answers UPDATE for such pairs: tests/realmodel/test_identifier_answers.py);
- a new fact that states a candidate's text again is NONE: the same words, once case, punctuation,
  whitespace and the articles "a", "an", "the" are set aside ("The user lives in Berlin." repeats
  "User lives in Berlin").

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

import re
import unicodedata

from memory.llm.fact_decisions import numbered_apart
from memory.pipeline.types import CandidatesResult, Decision, NewFact, SimilarFact

# Marks a decision made here; the formation summary counts decisions by rule and by model with it.
RULE = "rule"
NO_CANDIDATE = f"{RULE}: no similar fact"
SAME_TEXT = f"{RULE}: states a stored fact again"
# A model's UPDATE, DELETE or NONE the rules refused (dedup.resolve): the fact is ADDed instead.
REFUSED = f"{RULE}: refused the model's"

# Words whose presence never changes what a fact says. Negations, tense and prepositions do
# ("is" / "was", "for" / "by"), so they stay.
_ARTICLES = frozenset({"a", "an", "the"})
_WORD = re.compile(r"[^\W_]+(?:[.,:'’][^\W_]+)*")


def words(text: str) -> tuple[str, ...]:
    """The fact's words in order: case-folded, NFKC, punctuation and articles dropped; a number
    keeps its inner separators ("50,000", "10:00") so "5" and "50,000" stay different words."""
    normal = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    return tuple(w for w in _WORD.findall(normal) if w not in _ARTICLES)


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
        if same is None:
            contested[fact.index] = similar
            continue
        decided.append(
            Decision(
                new_index=fact.index,
                event="NONE",
                existing_id=same.fact_id,
                expected_version=same.version,
                reasoning=SAME_TEXT,
            )
        )
    return decided, contested


def by_rule(decision: Decision) -> bool:
    return decision.reasoning.startswith(f"{RULE}:")


def refused(decision: Decision) -> bool:
    return decision.reasoning.startswith(REFUSED)
