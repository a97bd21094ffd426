"""Re-form a degraded window (`mnemos degraded reform`): its messages are never dropped, so the
steps that fell back can run again over them, in one process, against the configured provider.
A range the model still cannot carry in one answer is split in halves, down to one message, as
FormMemories splits a window (docs/backlog.md); messages that stay unusable are reported.

The facts the fallback added unmerged are left out of the candidates, those of every window within
the range whose decisions the store recorded as fallen back (a range may span several, or be
wider than the one window): the new decisions compare the facts with what was stored before, so
an UPDATE or DELETE of an older fact converges on the flagged copy (the store's duplicate rule)
instead of keeping two contradicting facts. The commit writes the memories and leaves the cursor
where it is. The store's records of the degraded windows (memory/degraded.py) within what was
re-formed are marked so, for the steps that ran again; a decision's only when its copies were
set aside."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from memory import ids
from memory.degraded import (
    DECIDE_FACTS,
    DegradedWindow,
    range_steps,
    undecided_within,
    unmerged_copies,
)
from memory.deps import Deps
from memory.errors import InvalidInputError, InvalidModelOutputError
from memory.lookup import require_agent, require_session
from memory.model_check import CheckReport, attempt
from memory.pipeline import commit, dedup, facts, reflections
from memory.pipeline.types import CandidatesResult, CommitResult, NewReflection, Window
from memory.scopes import formable_scopes, single_user

# The records of one (agent, session) read for the windows a re-form covers, newest first; an
# older one beyond them keeps its copies among the candidates and stays listed.
_SESSION_RECORDS = 10_000


@dataclass(frozen=True)
class StillDegraded:
    """A message (or range) whose step is still unusable: (after_seq, upto_seq], and why."""

    after_seq: int
    upto_seq: int
    reason: str


@dataclass(frozen=True)
class Reformed:
    commit: CommitResult
    report: CheckReport
    still_degraded: list[StillDegraded] = field(default_factory=list)
    marked: int = 0  # degraded records marked re-formed


def _spans(parts: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Adjacent re-formed parts joined: a window re-formed in halves was re-formed whole."""
    spans: list[tuple[int, int]] = []
    for after, upto in sorted(parts):
        if spans and spans[-1][1] == after:
            spans[-1] = (spans[-1][0], upto)
        else:
            spans.append((after, upto))
    return spans


def _total(results: list[CommitResult]) -> CommitResult:
    keys = {k.key: k for r in results for k in r.due_for_consolidation}
    return CommitResult(
        already_committed=all(r.already_committed for r in results),
        facts_added=sum(r.facts_added for r in results),
        facts_updated=sum(r.facts_updated for r in results),
        facts_invalidated=sum(r.facts_invalidated for r in results),
        facts_duplicate=sum(r.facts_duplicate for r in results),
        reflections_added=sum(r.reflections_added for r in results),
        due_for_consolidation=list(keys.values()),
    )


async def reform(
    deps: Deps,
    agent_id: str,
    session_id: str,
    after_seq: int,
    upto_seq: int,
    *,
    with_reflections: bool = False,
    attempts: int = 3,
) -> Reformed:
    """Extract and decide the window's facts again (and its reflections when asked); a range
    whose step stays unusable is split in halves, down to one message. Raises
    InvalidModelOutputError when not a single part could be re-formed."""
    state = await deps.store.get_session_agent_state(session_id, agent_id)
    if state is None or not 0 <= after_seq < upto_seq <= state.cursor_seq:
        raise InvalidInputError(
            f"messages {after_seq + 1}-{upto_seq} of {session_id} are not a formed range of "
            f"{agent_id} (cursor {state.cursor_seq if state else 'none'})"
        )
    agent = await require_agent(deps.store, agent_id)
    session = await require_session(deps.store, session_id)
    fact_scopes, reflection_scopes = formable_scopes(agent, session)
    undecided = await _undecided(deps, agent_id, session_id, after_seq, upto_seq)
    original = ids.formation_id(session_id, agent_id, after_seq, upto_seq)
    # The facts the decide fallbacks added unmerged, left out of the candidates: the range's own
    # window's (one degraded before the store recorded it too) and each recorded one's within.
    flagged = unmerged_copies(
        {original, *(r.formation_id for r in undecided)}, deps.settings.facts.max_per_formation
    )
    # The users' erasure epochs now: a commit checks them (a user forgotten once is at 1, and a
    # window without them would be discarded as if formed before that erasure).
    epochs = await deps.store.erasure_epochs(agent_id, session.user_ids)
    report = CheckReport()
    done: list[CommitResult] = []
    formed: list[tuple[int, int]] = []
    still: list[StillDegraded] = []
    parts = [(after_seq, upto_seq)]
    while parts:
        after, upto = parts.pop(0)
        part = "" if (after, upto) == (after_seq, upto_seq) else f":{after}-{upto}"
        w = Window(
            formation_id=f"{original}:reform:{state.formations}{part}",
            session_id=session_id,
            agent_id=agent_id,
            user_id=single_user(session),
            after_seq=after,
            upto_seq=upto,
            message_count=upto - after,
            fact_scopes=fact_scopes,
            reflection_scopes=reflection_scopes,
            user_epochs=epochs,
            agent=agent,
        )
        try:
            done.append(
                await _reform_window(
                    deps, w, flagged, report, with_reflections, attempts, state.cursor_seq
                )
            )
            if not done[-1].discarded_for_erasure:  # a user forgotten meanwhile: nothing written
                formed.append((after, upto))
        except InvalidModelOutputError as e:
            if upto - after > 1:
                middle = after + (upto - after) // 2
                parts[:0] = [(after, middle), (middle, upto)]
            else:
                still.append(StillDegraded(after, upto, str(e)))
    if not done:
        raise InvalidModelOutputError(f"{still[0].reason} (messages {after_seq + 1}-{upto_seq})")
    marked, steps, now = 0, range_steps(with_reflections), datetime.now(UTC)
    for after, upto in _spans(formed):
        marked += await deps.store.mark_reformed(
            agent_id, session_id, after, upto, steps=steps, at=now
        )
        # The decisions' records one by one: those whose copies were set aside, not any other
        # the range holds (one older than the records _undecided read).
        for r in undecided_within(undecided, after, upto):
            marked += await deps.store.mark_reformed(
                agent_id, session_id, r.after_seq, r.upto_seq, steps=(DECIDE_FACTS,), at=now
            )
    return Reformed(commit=_total(done), report=report, still_degraded=still, marked=marked)


async def _undecided(
    deps: Deps, agent_id: str, session_id: str, after_seq: int, upto_seq: int
) -> list[DegradedWindow]:
    """The records of the windows within the range whose decisions fell back, re-formed ones too
    (their copies are the flagged ones an earlier re-form converged on: still not candidates)."""
    records = await deps.store.list_degraded(
        agent_id=agent_id, session_id=session_id, include_reformed=True, limit=_SESSION_RECORDS
    )
    return undecided_within(records, after_seq, upto_seq)


async def _reform_window(
    deps: Deps,
    w: Window,
    flagged: set[str],
    report: CheckReport,
    with_reflections: bool,
    attempts: int,
    keep_cursor: int,
) -> CommitResult:
    extracted, why = await attempt(
        report.steps["extract_facts"], lambda r: facts.extract_facts(deps, w, r), attempts
    )
    if extracted is None:
        raise InvalidModelOutputError(f"still degraded: extract_facts: {why}")
    new = extracted.facts
    found = await facts.find_candidates(deps, w, new)
    candidates = CandidatesResult(
        by_new_index={
            i: kept
            for i, cands in found.by_new_index.items()
            if (kept := [c for c in cands if c.fact_id not in flagged])
        }
    )
    decided, why = await attempt(
        report.steps["decide_facts"], lambda r: dedup.decide(deps, w, new, candidates, r), attempts
    )
    if decided is None:
        raise InvalidModelOutputError(f"still degraded: decide_facts: {why}")
    formed_reflections: list[NewReflection] = []
    if with_reflections:
        texts = [d.final_text for d in decided.decisions if d.final_text and d.event != "NONE"]
        reflected, why = await attempt(
            report.steps["extract_reflections"],
            lambda r: reflections.extract_reflections(deps, w, texts, r),
            attempts,
        )
        if reflected is None:
            raise InvalidModelOutputError(f"still degraded: extract_reflections: {why}")
        formed_reflections = reflected.reflections
    return await commit.commit(
        deps,
        w,
        new,
        decided.decisions,
        formed_reflections,
        datetime.now(UTC),
        keep_cursor=keep_cursor,
    )
