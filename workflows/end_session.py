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

with workflow.unsafe.imports_passed_through():
    from activities.session_end import SessionEndActivities
    from memory.pipeline.types import SessionEndRequest
    from memory.settings import RetrySettings
    from workflows import options
    from workflows.naming import END_SESSION_WORKFLOW
    from workflows.summary import ConsolidationSummary, FormationSummary, SessionEndSummary

# A formation pass makes about four LLM calls, each with its retries; a session end may drain a few
# windows, and stale decisions are re-decided for a while.
_LLM_STEPS_WAITED = 16


def _waiting(r: RetrySettings) -> dict[str, Any]:
    """Options of a step that waits on another workflow: heartbeats (every activity does) catch a
    dead worker in seconds; the timeout only bounds a formation that never ends."""
    waited = r.llm_timeout_seconds * r.llm_max_attempts * _LLM_STEPS_WAITED
    return {
        **options.store(r),
        "start_to_close_timeout": timedelta(seconds=waited + r.stale_decision_seconds),
    }


@workflow.defn(name=END_SESSION_WORKFLOW)
class EndSessionWorkflow:
    @workflow.run
    async def run(self, req: SessionEndRequest) -> SessionEndSummary:
        await workflow.execute_activity_method(
            SessionEndActivities.mark_session_ended,
            args=[req.session_id, req.ended_at, req.agent_id],
            **options.store(req.retries),
        )
        waiting = _waiting(req.retries)
        formation: FormationSummary = await workflow.execute_activity_method(
            SessionEndActivities.form_session_rest, req, **waiting
        )
        consolidation: ConsolidationSummary = await workflow.execute_activity_method(
            SessionEndActivities.consolidate_session_scope, req, **waiting
        )
        workflow.upsert_memo(
            {
                "summary": f"{formation.messages_formed} message(s) formed, "
                f"{consolidation.absorbed} reflection(s) consolidated"
            }
        )
        return SessionEndSummary(formation=formation, consolidation=consolidation)
