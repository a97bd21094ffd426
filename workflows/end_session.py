"""EndSession: the durable end of one agent's session, one workflow per (agent, session) under
``end:{agent}:{session}``, started idempotently (a second start while it runs joins it).

It marks the session ended, forms what is left (the session's FormMemories, below the thresholds
too) and consolidates the session scope whatever its buffer size. The client may wait for its
result; a wait that breaks (Temporal restarted, the backend's process gone) loses nothing, since the
workflow goes on by itself. A run that fails for good leaves an ended session with unformed
messages or a non-empty session buffer, which the cold-sessions job finishes.
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
    from workflows.summary import ConsolidationSummary, FormationSummary, SessionEndSummary

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


async def _polled[T](look: Any, workflow_id: str, r: RetrySettings) -> T:
    """Look at another workflow's outcome until it is there, with a durable timer between looks
    (doubling to a cap): the wait is the workflow's, never an activity's."""
    budget = (
        r.llm_timeout_seconds * r.llm_max_attempts * _LLM_STEPS_WAITED + r.stale_decision_seconds
    )
    started = workflow.now()
    deadline = started + timedelta(seconds=budget)
    pause = _POLL_FIRST_SECONDS
    while True:
        outcome: T | None = await workflow.execute_activity_method(
            look, workflow_id, **options.store(r)
        )
        if outcome is not None:
            return outcome
        if workflow.now() >= deadline:
            raise ApplicationError(f"{workflow_id} still running after {budget:.0f} s")
        await workflow.sleep(timedelta(seconds=pause))
        cap = _POLL_MAX_SECONDS
        waited = (workflow.now() - started).total_seconds()
        if waited >= _POLL_SLOWER_AFTER_SECONDS and workflow.patched(POLL_SLOWER):
            cap = _POLL_SLOW_SECONDS
        pause = min(pause * 2, cap)


@workflow.defn(name=END_SESSION_WORKFLOW)
class EndSessionWorkflow:
    @workflow.run
    async def run(self, req: SessionEndRequest) -> SessionEndSummary:
        await workflow.execute_activity_method(
            SessionEndActivities.mark_session_ended,
            args=[req.session_id, req.ended_at, req.agent_id],
            **options.store(req.retries),
        )
        r = req.retries
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
        workflow.upsert_memo(
            {
                "summary": f"{formation.messages_formed} message(s) formed, "
                f"{consolidation.absorbed} reflection(s) consolidated"
            }
        )
        return SessionEndSummary(formation=formation, consolidation=consolidation)
