"""Session lifecycle activities of the cold-sessions job: find idle sessions, start their
formations, purge old session memory.

Cold sessions are formed by the same FormMemories as the hot path, started by signal-with-start
under its ``form:{agent}:{session}`` id (``runtime.starts``): a child workflow cannot be used, since a
hot trigger may hold that id already, and the shared id is exactly what makes a cold run and a hot
trigger on one session give one formation per message range.

The activity only starts the formations (a bounded number of starts at a time) and returns: no
activity waits on another workflow's result, so a slow LLM never holds an activity slot of the job,
and a worker crash loses nothing (a retried start is the same signal-with-start, idempotent by the
workflow id and the cursor). The job therefore counts what it started and what failed to start; a
formation's own failure is visible on that formation's run (its id names the session), and the
session, still cold, is started again by the next scheduled run.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from structlog.stdlib import BoundLogger
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import classified
from memory.deps import Deps
from memory.logging import get_logger
from memory.lookup import require_session
from memory.models import Id, SessionAgentState, SessionInfo, UtcDatetime
from runtime.starts import start_formation, start_session_end
from workflows.naming import session_end_workflow_id

# "started", "retry_later" (Temporal unreachable for now) and "failed" (to start) are what the job
# reports now, and "nothing_due" for an end not restarted (its last run finished, nothing said
# since: end_settled); the others are kept so results of runs recorded before formations were
# started without waiting still decode.
Outcome = Literal["started", "retry_later", "formed", "nothing_due", "still_running", "failed"]
# A transport error is Temporal unreachable for a moment, not a failed session: the session stays
# in the index and the next scheduled run starts it.
_TRANSPORT = {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED}

_ERROR_CHARS = 300


class _T(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColdCursor(_T):
    """Position in the cold-sessions index: the last (session, agent) read, in its sort order."""

    last_message_at: UtcDatetime
    session_id: Id
    agent_id: Id

    @classmethod
    def of(cls, state: SessionAgentState) -> ColdCursor:
        if state.last_message_at is None:  # the store only lists states with messages
            raise ValueError(f"cold session {state.session_id!r} has no last_message_at")
        return cls(
            last_message_at=state.last_message_at,
            session_id=state.session_id,
            agent_id=state.agent_id,
        )


class ColdPageRequest(_T):
    idle_before: UtcDatetime
    min_messages: int = Field(ge=1)
    min_weighted_tokens: float = Field(ge=0)
    after: ColdCursor | None = None
    limit: int = Field(ge=1)


class ColdPage(_T):
    sessions: list[SessionAgentState]
    last: ColdCursor | None = Field(None, description="Where the next page starts")


class ColdFormRequest(_T):
    sessions: list[SessionAgentState]
    concurrency: int = Field(ge=1, description="Starts in flight at once")
    wait_seconds: float = Field(
        1.0, gt=0, description="Unused: formations are started, never waited on (older runs)"
    )


class EndedPage(_T):
    """Ended sessions whose session scope still buffers reflections, and where the next page starts."""

    sessions: list[tuple[Id, Id]] = Field(description="(session_id, agent_id)")
    ended_before: UtcDatetime


class SessionOutcome(_T):
    session_id: Id
    agent_id: Id
    outcome: Outcome
    formations: int = 0
    messages_formed: int = 0
    error: str | None = None


def describe_error(err: BaseException) -> str:
    """The chain of causes in one line (a failed workflow wraps the activity error that matters)."""
    parts: list[str] = []
    seen: BaseException | None = err
    while seen is not None and len(parts) < 4:
        parts.append(f"{type(seen).__name__}: {seen}")
        cause = getattr(seen, "cause", None)
        seen = cause if isinstance(cause, BaseException) else seen.__cause__
    return " <- ".join(parts)[:_ERROR_CHARS]


def end_settled(
    status: WorkflowExecutionStatus | None, started_at: datetime, last_message_at: datetime | None
) -> bool:
    """Whether an ended session's last EndSession (its status and start) did all it could: it ran
    to completion, and nothing was said in the session since it started. Its formation then
    formed (or withheld) every message, and its consolidation either took the buffer or gave up
    visibly (an output no draft can take stays buffered): restarting it would only draft the same
    buffer again, paid, every run of the job. A message said since makes it due again (once the
    session is quiet: the store lists only those); a run that failed, or never ran, is due."""
    said_since = last_message_at is not None and last_message_at >= started_at
    return status == WorkflowExecutionStatus.COMPLETED and not said_since


class SessionActivities:
    def __init__(self, deps: Deps, client: Client) -> None:
        self.deps = deps
        self.client = client

    @activity.defn(name="find_cold_sessions")
    async def find_cold_sessions(self, req: ColdPageRequest) -> ColdPage:
        after = req.after
        with classified():
            sessions = await self.deps.store.list_cold_sessions(
                idle_before=req.idle_before,
                min_messages=req.min_messages,
                min_weighted_tokens=req.min_weighted_tokens,
                after=(after.last_message_at, after.session_id, after.agent_id) if after else None,
                limit=req.limit,
            )
        return ColdPage(sessions=sessions, last=ColdCursor.of(sessions[-1]) if sessions else None)

    @activity.defn(name="purge_ended_sessions")
    async def purge_ended_sessions(self, ended_before: datetime, limit: int) -> list[str]:
        with classified():
            purged = await self.deps.store.purge_ended_sessions(ended_before, limit)
        if purged:
            get_logger(workflow_id=activity.info().workflow_id).info(
                "session memory of ended sessions purged", sessions=purged
            )
        return purged

    @activity.defn(name="start_cold_formations")
    async def start_cold_formations(self, req: ColdFormRequest) -> list[SessionOutcome]:
        """Start the formation of each session of the page and return at once. A failure to start
        is an outcome, never raised, so one bad session does not stop the others."""
        limit = asyncio.Semaphore(req.concurrency)

        async def one(state: SessionAgentState) -> SessionOutcome:
            async with limit:
                return await self._start(state.session_id, state.agent_id)

        return list(await asyncio.gather(*(one(state) for state in req.sessions)))

    @activity.defn(name="form_cold_sessions")
    async def form_cold_sessions(self, req: ColdFormRequest) -> list[SessionOutcome]:
        """The activity of runs scheduled before ``start_cold_formations``: the same starts, so
        those runs finish too, without waiting on the formations."""
        return await self.start_cold_formations(req)

    @activity.defn(name="find_unfinished_ended_sessions")
    async def find_unfinished_ended_sessions(
        self, ended_before: datetime, limit: int, after: tuple[str, str] | None = None
    ) -> EndedPage:
        """A page of ended sessions to finish, strictly after ``after`` (session_id, agent_id);
        runs scheduled before FINISH_ENDED_PAGES pass no cursor and read the first page."""
        with classified():
            found = await self.deps.store.list_unfinished_ended_sessions(
                ended_before=ended_before, after=after, limit=limit
            )
        return EndedPage(sessions=found, ended_before=ended_before)

    @activity.defn(name="start_session_ends")
    async def start_session_ends(self, page: EndedPage, concurrency: int) -> list[SessionOutcome]:
        """Start (or join) the EndSession of each ended session whose session buffer is not
        empty: it forms what is left and consolidates; not one whose last run did all it could
        (end_settled: "nothing_due"). Outcomes, never raised, as for formations."""
        limit = asyncio.Semaphore(concurrency)

        async def one(session_id: str, agent_id: str) -> SessionOutcome:
            async with limit:
                return await self._start(session_id, agent_id, end=page.ended_before)

        return list(await asyncio.gather(*(one(s, a) for s, a in page.sessions)))

    async def _start(
        self, session_id: str, agent_id: str, *, end: datetime | None = None
    ) -> SessionOutcome:
        ids = {"session_id": session_id, "agent_id": agent_id}
        log = get_logger(**ids, workflow_id=activity.info().workflow_id)
        try:
            session = await require_session(self.deps.store, session_id, agent_id)
            settings = self.deps.settings
            if end is None:
                await start_formation(self.client, settings, session, agent_id, force=True)
            elif await self._end_settled(session, agent_id):
                log.info("session end not restarted: its last run finished, nothing said since")
                return SessionOutcome(**ids, outcome="nothing_due")
            else:
                ended_at = session.ended_at or end
                await start_session_end(self.client, settings, session, agent_id, ended_at)
        except RPCError as err:
            if err.status not in _TRANSPORT:
                return self._failed(log, ids, err)
            log.warning("Temporal unreachable: start again later", error=describe_error(err))
            return SessionOutcome(**ids, outcome="retry_later", error=describe_error(err))
        except Exception as err:  # any failure of one session is reported, not raised
            return self._failed(log, ids, err)
        log.info("session started", end=end is not None)
        return SessionOutcome(**ids, outcome="started")

    async def _end_settled(self, session: SessionInfo, agent_id: str) -> bool:
        """end_settled for the latest EndSession run of (agent, session). One Temporal keeps no
        more (never started, or closed longer ago than the namespace's retention) is due: such an
        end is restarted at most once per retention period."""
        end_id = session_end_workflow_id(agent_id, session.session_id)
        try:
            run = await self.client.get_workflow_handle(end_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return False
            raise
        return end_settled(run.status, run.start_time, session.last_message_at)

    @staticmethod
    def _failed(log: BoundLogger, ids: dict[str, str], err: Exception) -> SessionOutcome:
        error = describe_error(err)
        log.error("cold session could not be started", error=error)
        return SessionOutcome(**ids, outcome="failed", error=error)
