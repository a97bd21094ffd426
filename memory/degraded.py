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

from collections.abc import Iterable
from datetime import datetime

from pydantic import BaseModel, field_validator

from memory import ids

# The steps as FormMemories names them; `mnemos degraded reform` re-runs the fact steps, and
# the reflection step only when asked.
EXTRACT_FACTS = "extract_facts"
DECIDE_FACTS = "decide_fact_changes"
EXTRACT_REFLECTIONS = "extract_reflections"
FACT_STEPS = (EXTRACT_FACTS, DECIDE_FACTS)

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


def reform_steps(with_reflections: bool) -> tuple[str, ...]:
    """The steps a re-form runs again, whose records it marks re-formed (the decisions' as
    range_steps and undecided_within say)."""
    return (*FACT_STEPS, EXTRACT_REFLECTIONS) if with_reflections else FACT_STEPS


def range_steps(with_reflections: bool) -> tuple[str, ...]:
    """The steps whose records a re-form marks by the range it formed again: running them over
    the messages again is all they need. Not the decisions': their fallback left facts added
    unmerged, handled only when the re-form set them aside (undecided_within)."""
    return tuple(s for s in reform_steps(with_reflections) if s != DECIDE_FACTS)


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


def unmerged_copies(formation_ids: Iterable[str], per_formation: int) -> set[str]:
    """The ids the decide fallback of these formations gave the facts it added unmerged: each new
    fact of a window under its index (memory/pipeline/commit.py), at most ``per_formation``."""
    return {ids.fact_id(f, i) for f in formation_ids for i in range(per_formation)}
