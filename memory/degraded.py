"""Degraded windows: a formation step whose model output stayed unusable through its retries took
its fallback, or a single message no retry could extract was passed over (docs/backlog.md).

FormMemories notes each in its run's summary and memo; the store keeps a lasting record of each,
written with the window's memories (activities/formation.py), so that `mnemos degraded list`
finds it however long the run, whether the run later failed, and after the namespace's retention
deleted the run; `mnemos degraded reform` marks it re-formed. The rules every backend shares
are here: the key, what a record holds, which are written and which a re-form covers: a record
is marked re-formed only once what its fallback left behind was handled, so that `degraded list`
keeps listing a problem that remains."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import pairwise

from pydantic import BaseModel, field_validator

from memory import ids

# The steps as FormMemories names them; `mnemos degraded reform` re-runs those that fell back
# (reform_parts), the reflection step only when asked.
EXTRACT_FACTS = "extract_facts"
DECIDE_FACTS = "decide_fact_changes"
EXTRACT_REFLECTIONS = "extract_reflections"
FACT_STEPS = (EXTRACT_FACTS, DECIDE_FACTS)
REFLECTION_STEPS = (EXTRACT_REFLECTIONS,)

# A reason is the model's complaint, often quoting its output: short, as in the runs' memos.
REASON_CHARS = 300
# What forget_user leaves of the reasons of a session it keeps (another user stays in it): the
# window, its step and range, stay to be re-formed; a quote of the forgotten user's words does not.
ERASED_REASON = "(reason erased with a forgotten user's messages)"

type DegradedKey = tuple[str, str, int, int, str]  # agent, session, after_seq, upto_seq, step


class DegradedStep(BaseModel):
    """A window whose LLM step took its fallback: which messages, which step, why."""

    after_seq: int
    upto_seq: int
    step: str
    reason: str


class DegradedWindow(BaseModel):
    """The store's record of one degraded step of one window: messages (after_seq, upto_seq] of
    the agent's session, the formation that committed them, and when it was re-formed (None
    until `mnemos degraded reform` formed the range again)."""

    agent_id: str
    session_id: str
    after_seq: int
    upto_seq: int
    step: str
    reason: str
    formation_id: str
    degraded_at: datetime
    reformed_at: datetime | None = None

    @field_validator("reason")
    @classmethod
    def _short(cls, reason: str) -> str:
        return reason[:REASON_CHARS]

    @property
    def key(self) -> DegradedKey:
        return (self.agent_id, self.session_id, self.after_seq, self.upto_seq, self.step)


def degraded_windows(
    agent_id: str, session_id: str, formation_id: str, steps: Iterable[DegradedStep], at: datetime
) -> list[DegradedWindow]:
    """The records of a committed window's degraded steps, one per key (a decision decided again
    after going stale may have fallen back twice)."""
    unique: dict[DegradedKey, DegradedWindow] = {}
    for s in steps:
        record = DegradedWindow(
            agent_id=agent_id, session_id=session_id, after_seq=s.after_seq,
            upto_seq=s.upto_seq, step=s.step, reason=s.reason, formation_id=formation_id,
            degraded_at=at,
        )  # fmt: skip
        unique.setdefault(record.key, record)
    return list(unique.values())


@dataclass(frozen=True)
class ReformPart:
    """Messages (after_seq, upto_seq] a re-form forms again, and which of its steps run."""

    after_seq: int
    upto_seq: int
    facts: bool  # extract_facts and decide_fact_changes
    reflections: bool  # extract_reflections

    @property
    def steps(self) -> tuple[str, ...]:
        return (
            *(FACT_STEPS if self.facts else ()),
            *(REFLECTION_STEPS if self.reflections else ()),
        )


def reform_parts(
    records: Iterable[DegradedWindow], after_seq: int, upto_seq: int, with_reflections: bool
) -> list[ReformPart]:
    """Where a re-form of (after_seq, upto_seq] runs which steps again: a step only over the
    windows whose record of it within the range is not re-formed yet, the reflection step only
    when asked. Not over a window whose step went well: a model never words a fact the same way
    twice, so its facts extracted again would be stored a second time, reworded (as would its
    reflections). A range the store holds no record of (degraded before the store kept them,
    `degraded list` read it from a run's memo) is formed again as asked, each memo line naming
    one step: its fact steps, or with reflections its reflection step alone. Empty: nothing in
    the range is left to re-form."""
    within = [r for r in records if after_seq <= r.after_seq and r.upto_seq <= upto_seq]
    if not within:
        return [ReformPart(after_seq, upto_seq, not with_reflections, with_reflections)]
    left = [r for r in within if r.reformed_at is None]
    facts = [(r.after_seq, r.upto_seq) for r in left if r.step in FACT_STEPS]
    reflections = [
        (r.after_seq, r.upto_seq) for r in left if with_reflections and r.step in REFLECTION_STEPS
    ]
    cuts = sorted({after_seq, upto_seq, *(seq for span in facts + reflections for seq in span)})
    parts: list[ReformPart] = []
    for after, upto in pairwise(cuts):
        part = ReformPart(
            after, upto,
            any(a <= after and upto <= b for a, b in facts),
            any(a <= after and upto <= b for a, b in reflections),
        )  # fmt: skip
        if not (part.facts or part.reflections):
            continue
        last = parts[-1] if parts else None
        if last and last.upto_seq == after and last.steps == part.steps:
            parts[-1] = replace(last, upto_seq=upto)  # adjacent windows: one range, as asked
        else:
            parts.append(part)
    return parts


def undecided_within(
    records: Iterable[DegradedWindow], after_seq: int, upto_seq: int
) -> list[DegradedWindow]:
    """The records of the windows within (after_seq, upto_seq] whose decisions fell back: a
    re-form of the range sets aside the facts each one's formation added unmerged
    (unmerged_copies), however many windows the range spans, and marks these records one by one
    (a record it did not read stays listed)."""
    return [
        r
        for r in records
        if r.step == DECIDE_FACTS and after_seq <= r.after_seq and r.upto_seq <= upto_seq
    ]


def formations_of(records: Iterable[DegradedWindow]) -> dict[str, int]:
    """The formations of these records' windows, each with its window's number of messages: the
    one each names, and the one FormMemories names its range by (ids.formation_id; the same for
    a record its commit wrote)."""
    return {
        f: r.upto_seq - r.after_seq
        for r in records
        for f in (
            r.formation_id,
            ids.formation_id(r.session_id, r.agent_id, r.after_seq, r.upto_seq),
        )
    }


def unmerged_copies(bounds: Mapping[str, int]) -> set[str]:
    """The ids the decide fallback of these formations gave the facts it added unmerged: each new
    fact of a window under its index (memory/pipeline/commit.py), from 0 up to its formation's
    bound (memory/pipeline/pieces.py ``most_facts``: facts.max_per_formation for a window of
    several messages, more for one of one dense message). Bounded per formation: the set of a
    range of many windows stays what those windows can hold."""
    return {ids.fact_id(f, i) for f, most in bounds.items() for i in range(most)}
