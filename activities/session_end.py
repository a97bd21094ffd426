"""Session-end activities: mark the session ended, form what is left of it, consolidate its
session scope. The last two start the serialised workflow of their id (signal-with-start, as every
caller does) and wait for its result while heartbeating: a retried attempt (worker killed, wait
broken) asks again, which is idempotent by the workflow id and the cursor, and waits again."""

from __future__ import annotations

from datetime import datetime

from temporalio import activity
from temporalio.client import Client

from activities.errors import classified
from memory.deps import Deps
from memory.logging import get_logger
from memory.lookup import require_session
from memory.models import ScopeKey
from memory.pipeline.types import SessionEndRequest
from runtime.starts import request_consolidation, start_formation
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

    @activity.defn(name="form_session_rest")
    async def form_session_rest(self, req: SessionEndRequest) -> FormationSummary:
        """Form everything still unformed, below the thresholds too; the formation's summary."""
        with classified():
            session = await require_session(self.deps.store, req.session_id, req.agent_id)
        handle = await start_formation(
            self.client, self.deps.settings, session, req.agent_id, force=True
        )
        return await handle.result()

    @activity.defn(name="consolidate_session_scope")
    async def consolidate_session_scope(self, req: SessionEndRequest) -> ConsolidationSummary:
        """Consolidate the session scope whatever its buffer size (after the formation, so the
        reflections it buffered are in the blob too)."""
        key = ScopeKey.session(req.agent_id, req.session_id)
        handle = await request_consolidation(self.client, self.deps.settings, key, force=True)
        summary = await handle.result()
        get_logger(agent_id=req.agent_id, session_id=req.session_id).info(
            "session scope consolidated", version=summary.version, absorbed=summary.absorbed
        )
        return summary
