"""Session-end activities: mark the session ended, start the session's formation and its
session-scope consolidation (signal-with-start of the serialised workflow of their id, as every
caller does), and look at their outcome. No activity waits on another workflow: EndSession polls
the outcome with durable timers between looks, so a killed worker or a broken connection costs one
look, and a retried start is idempotent by the workflow id and the cursor."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.exceptions import ApplicationError

from activities.errors import classified
from memory.deps import Deps
from memory.logging import get_logger
from memory.lookup import require_session
from memory.models import ScopeKey
from memory.pipeline.types import SessionEndRequest
from runtime.starts import request_consolidation, start_formation
from workflows.naming import WAITING_UNTIL
from workflows.summary import ConsolidationSummary, FormationSummary


class SessionEndActivities:
    def __init__(self, deps: Deps, client: Client) -> None:
        self.deps = deps
        self.client = client

    @activity.defn(name="mark_session_ended")
    async def mark_session_ended(self, session_id: str, at: datetime, agent_id: str) -> None:
        """Ending is the agent's own: another agent of the session keeps forming."""
        with classified():
            await self.deps.store.end_session(session_id, agent_id, at)

    @activity.defn(name="start_session_formation")
    async def start_session_formation(self, req: SessionEndRequest) -> str:
        """Start (or signal) the session's FormMemories to form everything still unformed, below
        the thresholds too; its workflow id, whose outcome the workflow then polls."""
        with classified():
            session = await require_session(self.deps.store, req.session_id, req.agent_id)
        handle = await start_formation(
            self.client, self.deps.settings, session, req.agent_id, force=True
        )
        return handle.id

    @activity.defn(name="start_session_consolidation")
    async def start_session_consolidation(self, req: SessionEndRequest) -> str:
        """Start (or signal) the session scope's ConsolidateScope, whatever its buffer size (after
        the formation, so the reflections it buffered are in the blob too); its workflow id."""
        key = ScopeKey.session(req.agent_id, req.session_id)
        handle = await request_consolidation(self.client, self.deps.settings, key, force=True)
        return handle.id

    @activity.defn(name="formation_outcome")
    async def formation_outcome(self, workflow_id: str) -> FormationSummary | None:
        """The formation's summary once its latest run completed, None while it runs."""
        return await _outcome(self.client, workflow_id, FormationSummary)

    @activity.defn(name="run_progress")
    async def run_progress(self, workflow_id: str) -> str:
        """Where the polled run has got (compared between looks: moved, or stuck)."""
        return await _progress(self.client, workflow_id)

    @activity.defn(name="consolidation_outcome")
    async def consolidation_outcome(self, workflow_id: str) -> ConsolidationSummary | None:
        """The consolidation's summary once its latest run completed, None while it runs."""
        summary = await _outcome(self.client, workflow_id, ConsolidationSummary)
        if summary is not None:
            get_logger(workflow_id=workflow_id).info(
                "session scope consolidated", version=summary.version, absorbed=summary.absorbed
            )
        return summary


async def _progress(client: Client, workflow_id: str) -> str:
    """How far the workflow has got: its latest run and that run's history length, which grow
    while it makes progress (a workflow task that fails for ever adds no event). A run waiting
    out a durable timer it announced in its memo (ConsolidateScope's outage wait: up to hours, no
    event meanwhile, longer than the end's budget) is not stuck: each look until then reads as
    moved, with its own time."""
    described = await client.get_workflow_handle(workflow_id).describe()
    where = f"{described.run_id}:{described.history_length}"
    until = _waiting_until(await described.memo())
    # The server's clock, as the run's timer reads it (a time-skipping server's too).
    now = activity.info().current_attempt_scheduled_time
    if until is not None and until > now:
        return f"{where}:waiting until {until.isoformat()}, looked at {now.isoformat()}"
    return where


def _waiting_until(memo: Mapping[str, Any]) -> datetime | None:
    """The end of the wait a run announced (workflows.naming.WAITING_UNTIL), None when it
    announced none, or one this worker cannot read."""
    value = memo.get(WAITING_UNTIL)
    try:
        until = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return until if until is not None and until.tzinfo is not None else None


async def _outcome[T](client: Client, workflow_id: str, result_type: type[T]) -> T | None:
    """A look, never a wait: the latest run's result when it completed, None while it runs. A run
    that ended otherwise fails the step for good; the cold-sessions job finishes the session."""
    handle = client.get_workflow_handle(workflow_id, result_type=result_type)
    status = (await handle.describe()).status
    if status == WorkflowExecutionStatus.RUNNING:
        return None
    if status != WorkflowExecutionStatus.COMPLETED:
        raise ApplicationError(
            f"{workflow_id} ended {status.name if status else 'unknown'}", non_retryable=True
        )
    result: T = await handle.result()
    return result
