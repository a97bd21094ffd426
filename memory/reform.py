"""Re-form a degraded window (`mnemos degraded reform`): its messages are never dropped, so the
steps that fell back can run again over them, in one process, against the configured provider.

The facts the fallback added unmerged are left out of the candidates: the new decisions compare
the window's facts with what was stored before, so an UPDATE or DELETE of an older fact converges
on the flagged copy (the store's duplicate rule) instead of keeping two contradicting facts. The
commit writes the memories and leaves the cursor where it is."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from memory import ids
from memory.deps import Deps
from memory.errors import InvalidInputError, InvalidModelOutputError
from memory.lookup import require_agent, require_session
from memory.model_check import CheckReport, attempt
from memory.pipeline import commit, dedup, facts, reflections
from memory.pipeline.types import CandidatesResult, CommitResult, NewReflection, Window
from memory.scopes import formable_scopes, single_user


@dataclass(frozen=True)
class Reformed:
    commit: CommitResult
    report: CheckReport


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
    """Extract and decide the window's facts again (and its reflections when asked)."""
    state = await deps.store.get_session_agent_state(session_id, agent_id)
    if state is None or not 0 <= after_seq < upto_seq <= state.cursor_seq:
        raise InvalidInputError(
            f"messages {after_seq + 1}-{upto_seq} of {session_id} are not a formed range of "
            f"{agent_id} (cursor {state.cursor_seq if state else 'none'})"
        )
    agent = await require_agent(deps.store, agent_id)
    session = await require_session(deps.store, session_id)
    fact_scopes, reflection_scopes = formable_scopes(agent, session)
    original = ids.formation_id(session_id, agent_id, after_seq, upto_seq)
    w = Window(
        formation_id=f"{original}:reform:{state.formations}",
        session_id=session_id,
        agent_id=agent_id,
        user_id=single_user(session),
        after_seq=after_seq,
        upto_seq=upto_seq,
        message_count=upto_seq - after_seq,
        fact_scopes=fact_scopes,
        reflection_scopes=reflection_scopes,
        agent=agent,
    )
    report = CheckReport()
    extracted, why = await attempt(
        report.steps["extract_facts"], lambda r: facts.extract_facts(deps, w, r), attempts
    )
    if extracted is None:
        raise InvalidModelOutputError(f"still degraded: extract_facts: {why}")
    new = extracted.facts
    flagged = {ids.fact_id(original, i) for i in range(deps.settings.facts.max_per_formation)}
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
    done = await commit.commit(
        deps,
        w,
        new,
        decided.decisions,
        formed_reflections,
        datetime.now(UTC),
        keep_cursor=state.cursor_seq,
    )
    return Reformed(commit=done, report=report)
