"""Session lifecycle activities of the cold-sessions job: find idle sessions, form them, purge old
session memory.

Cold sessions are formed by the same FormMemories as the hot path, started by signal-with-start
under its ``form:{agent}:{session}`` id (``client.starts``): a child workflow cannot be used, since a
hot trigger may hold that id already, and the shared id is exactly what makes a cold run and a hot
trigger on one session give one formation per message range. The activity starts each formation
and waits for its result, a bounded number at a time, so the job's concurrency is real and each
session's outcome is known; it heartbeats the outcomes so a retry after a worker crash resumes
where it stopped instead of asking every session again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity
from temporalio.client import Client

from activities.errors import classified
from memory.deps import Deps
from memory.errors import NotFoundError
from memory.logging import get_logger
from memory.models import Id, SessionAgentState, UtcDatetime
from runtime.starts import start_formation

Outcome = Literal["formed", "nothing_due", "still_running", "failed"]

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
    concurrency: int = Field(ge=1)
    wait_seconds: float = Field(
        gt=0, description="Longest wait for one formation; past it, it runs on unwatched"
    )


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


def _resumed(details: Sequence[Any]) -> dict[tuple[str, str], SessionOutcome]:
    """Outcomes heartbeated by an earlier attempt of this activity."""
    if not details:
        return {}
    outcomes = [SessionOutcome.model_validate(d) for d in details[0]]
    return {(o.session_id, o.agent_id): o for o in outcomes}


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

    @activity.defn(name="form_cold_sessions")
    async def form_cold_sessions(self, req: ColdFormRequest) -> list[SessionOutcome]:
        """Form each session of the page; failures are outcomes, never raised, so one bad session
        does not stop the others (it stays cold and is tried again by the next run)."""
        done = _resumed(activity.info().heartbeat_details)
        limit = asyncio.Semaphore(req.concurrency)

        async def one(state: SessionAgentState) -> None:
            async with limit:
                done[(state.session_id, state.agent_id)] = await self._form(state, req.wait_seconds)

        beating = asyncio.create_task(self._heartbeat(done))
        try:
            await asyncio.gather(
                *(
                    one(state)
                    for state in req.sessions
                    if (state.session_id, state.agent_id) not in done
                )
            )
        finally:
            beating.cancel()
        return [done[(s.session_id, s.agent_id)] for s in req.sessions]

    async def _form(self, state: SessionAgentState, wait_seconds: float) -> SessionOutcome:
        ids = {"session_id": state.session_id, "agent_id": state.agent_id}
        log = get_logger(**ids, workflow_id=activity.info().workflow_id)
        try:
            session = await self.deps.store.get_session(state.session_id)
            if session is None:
                raise NotFoundError(f"session {state.session_id!r} does not exist")
            handle = await start_formation(
                self.client, self.deps.settings, session, state.agent_id, force=True
            )
            summary = await asyncio.wait_for(handle.result(), wait_seconds)
        except TimeoutError:
            # The formation goes on in its own workflow; the session stays cold until it commits.
            log.warning("cold formation still running", waited_seconds=wait_seconds)
            return SessionOutcome(**ids, outcome="still_running")
        except Exception as err:  # any failure of one session is reported, not raised
            error = describe_error(err)
            log.error("cold formation failed", error=error)
            return SessionOutcome(**ids, outcome="failed", error=error)
        outcome: Outcome = "formed" if summary.formations else "nothing_due"
        log.info("cold session formed", outcome=outcome, messages=summary.messages_formed)
        return SessionOutcome(
            **ids,
            outcome=outcome,
            formations=summary.formations,
            messages_formed=summary.messages_formed,
        )

    async def _heartbeat(self, done: dict[tuple[str, str], SessionOutcome]) -> None:
        timeout = activity.info().heartbeat_timeout or timedelta(seconds=30)
        every = max(timeout / 3, timedelta(milliseconds=100)).total_seconds()
        while True:
            activity.heartbeat([o.model_dump(mode="json") for o in done.values()])
            await asyncio.sleep(every)
