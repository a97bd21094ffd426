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
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from structlog.stdlib import BoundLogger
from temporalio import activity
from temporalio.client import Client, WorkflowExecutionDescription, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from activities.errors import classified
from memory.deps import Deps
from memory.logging import get_logger
from memory.lookup import require_session
from memory.models import Id, ScopeKey, SessionAgentState, SessionInfo, UtcDatetime
from memory.settings import SessionSettings
from runtime.connection import TEMPORAL_TRANSIENT
from runtime.starts import start_formation, start_session_end
from workflows.naming import consolidation_workflow_id, session_end_workflow_id
from workflows.summary import ConsolidationSummary

# "started", "retry_later" (Temporal unreachable for now) and "failed" (to start) are what the job
# reports now, and for an end not started again, "still_running" or "nothing_due" (its last run
# did all it could: SessionActivities._end_left); "formed" is kept so results of runs recorded
# before formations were started without waiting still decode.
EndLeft = Literal["nothing_due", "still_running"]
Outcome = Literal["started", "retry_later", "formed", "nothing_due", "still_running", "failed"]
# A workflow run as the job weighs it: its status and when it started.
type RunFacts = tuple[WorkflowExecutionStatus | None, datetime]
# Temporal unreachable for a moment (connection.TEMPORAL_TRANSIENT) is not a failed session: the
# session stays in the index and the next scheduled run starts it.

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


def rest_cut(idle_before: datetime, sessions: SessionSettings) -> datetime:
    """When a session must have gone quiet for what is left of it to form however little
    (``form_rest_after_minutes``), on the clock of the job's idle cut: a session never ended
    kept its last turns (often a correction) unformed for good below the formation thresholds.
    The job's input carries the idle cut only (its runs already scheduled decode it), so the
    activity counts back from it by its own settings."""
    rest = max(0.0, sessions.form_rest_after_minutes - sessions.cold_after_minutes)
    return idle_before - timedelta(minutes=rest)


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


def drafted_all(consolidation: RunFacts | None, newest_buffered_at: datetime) -> bool:
    """Whether the latest consolidation of a scope (its run's status and start) drafted every
    reflection its buffer holds: it started after the newest was formed (its drafts read the
    buffer, batch after batch, until none is left but what no draft took), and it completed, or
    is still going. Whatever that run gave up on, drafting the
    same buffer again would give up the same way. (formed_at is a worker's clock, the start
    Temporal's: were a skew to make the end's own reflections look newer, the end restarted once
    consolidates again minutes later, which settles it.)"""
    if consolidation is None:  # never ran, or closed longer ago than the namespace's retention
        return False
    status, started_at = consolidation
    going = status in (WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.RUNNING)
    return going and newest_buffered_at < started_at


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
                rest_before=rest_cut(req.idle_before, self.deps.settings.sessions),
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
        """Start the EndSession of each ended session left unfinished (unformed messages or a
        session buffer not empty): it forms what is left and consolidates; not one whose latest
        run is going or did all it could (_end_left). Outcomes, never raised, as for formations."""
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
            elif left := await self._end_left(session, agent_id):
                log.info("session end not restarted", outcome=left)
                return SessionOutcome(**ids, outcome=left)
            else:
                ended_at = session.ended_at or end
                await start_session_end(self.client, settings, session, agent_id, ended_at)
        except RPCError as err:
            if err.status not in TEMPORAL_TRANSIENT:
                return self._failed(log, ids, err)
            log.warning("Temporal unreachable: start again later", error=describe_error(err))
            return SessionOutcome(**ids, outcome="retry_later", error=describe_error(err))
        except Exception as err:  # any failure of one session is reported, not raised
            return self._failed(log, ids, err)
        log.info("session started", end=end is not None)
        return SessionOutcome(**ids, outcome="started")

    async def _end_left(self, session: SessionInfo, agent_id: str) -> EndLeft | None:
        """Why the ended session's EndSession is not to be started again, None when it is.

        "still_running": its latest run is going. Signalled (signal-with-start), it would go
        round again, form and force-consolidate, once per run of the job while it waits out an
        outage, and never answer. It finishes what it can; the next run of the job looks again.

        "nothing_due": its latest run completed, the session holds no unformed message, and the
        latest consolidation of the session scope drafted every reflection buffered (drafted_all):
        what is left is what no draft could take, which a restart would only draft again, paid,
        every run of the job. A message recorded since (whatever its created_at), a reflection
        a formation buffered since, or one that consolidation set aside and a person corrected
        since (back in the buffer: _corrected_since), makes the end due again (once the session is
        quiet: the store lists only those). Store facts, not the clocks of clients.

        A run Temporal keeps no more (never started, or closed longer ago than the namespace's
        retention) is due: such an end is restarted at most once per retention period."""
        end = await self._latest_run(session_end_workflow_id(agent_id, session.session_id))
        if end is None or end[0] != WorkflowExecutionStatus.COMPLETED:
            running = end is not None and end[0] == WorkflowExecutionStatus.RUNNING
            return "still_running" if running else None
        store = self.deps.store
        state = await store.get_session_agent_state(session.session_id, agent_id)
        if state is None or state.pending_messages:
            return None
        key = ScopeKey.session(agent_id, session.session_id)
        newest = await store.unabsorbed_reflections(key, limit=1, newest_first=True)
        if not newest:
            return "nothing_due"
        run = await self._describe(consolidation_workflow_id(key))
        facts = None if run is None else (run.status, run.start_time)
        if not drafted_all(facts, newest[0].formed_at) or await self._corrected_since(run):
            return None
        return "nothing_due"

    async def _corrected_since(self, run: WorkflowExecutionDescription | None) -> bool:
        """Whether a reflection the completed consolidation ``run`` set aside is buffered again: a
        person corrected it since, for the next consolidation to take, and none has run since.
        A correction keeps the reflection's formed_at, so drafted_all takes it for drafted."""
        if run is None or run.status != WorkflowExecutionStatus.COMPLETED:
            return False
        handle = self.client.get_workflow_handle(
            run.id, run_id=run.run_id, result_type=ConsolidationSummary
        )
        summary = await handle.result(follow_runs=False)
        for reflection_id in summary.set_aside:
            found = await self.deps.store.get_reflection(reflection_id)
            if found is not None and found.absorbed_into_version is None:
                return True
        return False

    async def _latest_run(self, workflow_id: str) -> RunFacts | None:
        """The status and start of the latest run under ``workflow_id``; None when Temporal keeps
        none."""
        run = await self._describe(workflow_id)
        return None if run is None else (run.status, run.start_time)

    async def _describe(self, workflow_id: str) -> WorkflowExecutionDescription | None:
        """The latest run under ``workflow_id``; None when Temporal keeps none."""
        try:
            return await self.client.get_workflow_handle(workflow_id).describe()
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                return None
            raise

    @staticmethod
    def _failed(log: BoundLogger, ids: dict[str, str], err: Exception) -> SessionOutcome:
        error = describe_error(err)
        log.error("cold session could not be started", error=error)
        return SessionOutcome(**ids, outcome="failed", error=error)
