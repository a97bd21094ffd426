"""EndSession: the durable end of one agent's session, one workflow per (agent, session) under
``end:{agent}:{session}``, started with signal-with-start (runtime/starts.py): every end reaches
the one run, a new one or the one running, as its ``ended`` signal.

It marks the session ended, forms what is left (the session's FormMemories, below the thresholds
too) and consolidates the session scope whatever its buffer size; then, while ends came after its
last formation request (the session resumed and ended again meanwhile), it forms and consolidates
once more, so that every caller's answer comes when what was said before its end is formed. The
client may wait for its result; a wait that breaks (Temporal restarted, the backend's process gone)
loses nothing, since the workflow goes on by itself. A run that fails for good leaves an ended
session with unformed messages or a non-empty session buffer, which the cold-sessions job finishes.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.session_end import SessionEndActivities
    from memory.pipeline.types import SessionEndRequest
    from memory.settings import RetrySettings
    from workflows import options
    from workflows.naming import END_SESSION_WORKFLOW
    from workflows.summary import (
        ConsolidationSummary,
        FormationSummary,
        SessionEndSummary,
        added,
    )

# A formation pass makes about four LLM calls, each with its retries; a session end may drain a few
# windows, and stale decisions are re-decided for a while: that bounds the polling.
_LLM_STEPS_WAITED = 16
_POLL_FIRST_SECONDS = 0.5
_POLL_MAX_SECONDS = 10.0
# From it on, a wait longer than _POLL_SLOWER_AFTER_SECONDS looks once a minute: at 10 s a look, the
# budget of a slow local model (a 600 s LLM timeout: ~13 h) took ~4,800 looks, ~40k history
# events, near Temporal's hard limit of 51,200, which terminates the run.
POLL_SLOWER = "end-session-poll-slower"
_POLL_SLOWER_AFTER_SECONDS = 600.0
_POLL_SLOW_SECONDS = 60.0
# From it on, the budget is a wait without progress: past it, the end looks whether the run moved
# since the wait began or the last look (its run id or history grew) and, if so, waits another; before, a fixed budget failed the
# end of a long, healthy backlog (625 windows of a 50,000-message session at 8 s a call: more than
# 4 hours) with "still running".
PROGRESS_DEADLINE = "end-session-progress-deadline"
# From it on, an end that came after the run's last formation request makes it form and consolidate
# again before it answers; before, a second end joined the run and was answered when the first end's
# formation was done, what was said between the two ends still unformed.
END_AGAIN = "end-session-again"


async def _progress(workflow_id: str, r: RetrySettings) -> str:
    seen: str = await workflow.execute_activity_method(
        SessionEndActivities.run_progress, workflow_id, **options.store(r)
    )
    return seen


async def _polled[T](look: Any, workflow_id: str, r: RetrySettings) -> T:
    """Look at another workflow's outcome until it is there, with a durable timer between looks
    (doubling to a cap): the wait is the workflow's, never an activity's."""
    budget = (
        r.llm_timeout_seconds * r.llm_max_attempts * _LLM_STEPS_WAITED + r.stale_decision_seconds
    )
    started = workflow.now()
    deadline = started + timedelta(seconds=budget)
    pause = _POLL_FIRST_SECONDS
    progress: str | None = None
    while True:
        outcome: T | None = await workflow.execute_activity_method(
            look, workflow_id, **options.store(r)
        )
        if outcome is not None:
            return outcome
        if progress is None and workflow.patched(PROGRESS_DEADLINE):
            progress = await _progress(workflow_id, r)  # where the run was when the wait began
        if workflow.now() >= deadline:
            if not workflow.patched(PROGRESS_DEADLINE):
                raise ApplicationError(f"{workflow_id} still running after {budget:.0f} s")
            # A run whose workflow task fails for ever (Temporal writes no event for it) stays
            # where it is: that is what the budget still catches.
            seen = await _progress(workflow_id, r)
            if seen == progress:
                raise ApplicationError(f"{workflow_id} made no progress for {budget:.0f} s")
            progress, deadline = seen, workflow.now() + timedelta(seconds=budget)
        await workflow.sleep(timedelta(seconds=pause))
        cap = _POLL_MAX_SECONDS
        waited = (workflow.now() - started).total_seconds()
        if waited >= _POLL_SLOWER_AFTER_SECONDS and workflow.patched(POLL_SLOWER):
            cap = _POLL_SLOW_SECONDS
        pause = min(pause * 2, cap)


@workflow.defn(name=END_SESSION_WORKFLOW)
class EndSessionWorkflow:
    def __init__(self) -> None:
        # Ends received (a run an older client started has none); `_asked` of them were received
        # when the run last asked its formation, so that formation reads what they followed.
        self._ends = 0
        self._asked = 0

    @workflow.signal
    def ended(self) -> None:
        self._ends += 1

    @workflow.run
    async def run(self, req: SessionEndRequest) -> SessionEndSummary:
        await workflow.execute_activity_method(
            SessionEndActivities.mark_session_ended,
            args=[req.session_id, req.ended_at, req.agent_id],
            **options.store(req.retries),
        )
        done = await self._round(req)
        # An end after the last request may have followed messages that formation did not read.
        while self._ends > self._asked and workflow.patched(END_AGAIN):
            then = await self._round(req)
            done = SessionEndSummary(
                formation=added(done.formation, then.formation),
                consolidation=added(done.consolidation, then.consolidation),
            )
        workflow.upsert_memo(
            {
                "summary": f"{done.formation.messages_formed} message(s) formed, "
                f"{done.consolidation.absorbed} reflection(s) consolidated"
            }
        )
        return done

    async def _round(self, req: SessionEndRequest) -> SessionEndSummary:
        """Form what is left, then consolidate the session scope (the reflections it buffered)."""
        r = req.retries
        self._asked = self._ends
        forming: str = await workflow.execute_activity_method(
            SessionEndActivities.start_session_formation, req, **options.store(r)
        )
        formation: FormationSummary = await _polled(
            SessionEndActivities.formation_outcome, forming, r
        )
        consolidating: str = await workflow.execute_activity_method(
            SessionEndActivities.start_session_consolidation, req, **options.store(r)
        )
        consolidation: ConsolidationSummary = await _polled(
            SessionEndActivities.consolidation_outcome, consolidating, r
        )
        return SessionEndSummary(formation=formation, consolidation=consolidation)
