"""ColdSessions: form the sessions that went quiet before a formation threshold, and purge the
session memory of sessions ended long ago. Run by a Temporal Schedule (``runtime.schedule``), every
few minutes, overlap policy skip: at most one run of the job at a time.

A run fixes its idle cut (now - cold_after_minutes) once, then walks the store's cold-sessions index
oldest first, page by page, until the end: a backlog of any size is drained, and nothing ages out
(there is no date window). Every few pages it continues as new, carrying the cut, the index cursor
and the totals, so its history stays small. Formed sessions leave the index; a session that failed
stays in it behind the cursor, and the next scheduled run, which starts from the beginning again,
tries it once more. Then it walks the ended sessions left unfinished (an end whose workflow never
ran or failed, or gave up with something said since) and quiet since the idle cut the same way, and
starts their ends (the store and ``start_session_ends`` choose which).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any, NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel, ConfigDict, Field

    from activities.sessions import (
        ColdCursor,
        ColdFormRequest,
        ColdPage,
        ColdPageRequest,
        EndedPage,
        SessionActivities,
        SessionOutcome,
    )
    from memory.settings import RetrySettings, SessionSettings, Settings
    from workflows import options
    from workflows.naming import COLD_SESSIONS_WORKFLOW, OUTCOME

# Pages (of either kind) per run before continuing as new: keeps each run's history short and
# readable in the UI. Temporal's own suggestion to continue as new is honoured too.
PAGES_PER_RUN = 10
# The old path (before START_ONLY) sized its form activity by this many LLM-call timeouts.
_FORMATION_WAIT_LLM_TIMEOUTS = 4
# Formations are started, not awaited, from this version on.
START_ONLY = "cold-sessions-start-only"
# Ended sessions whose session buffer is not empty get their EndSession started, from this on.
FINISH_ENDED = "cold-sessions-finish-ended"
# Every page of unfinished ended sessions in one scheduled execution (carrying its cursor across
# continue-as-new), from this on; before it, the first page only, so ends that stayed unfinished
# (still running, or failing) filled that page in every run and the ones after it never started.
FINISH_ENDED_PAGES = "cold-sessions-finish-ended-pages"
# Failed sessions kept by name in the result; the count is always exact.
_FAILURES_SHOWN = 20


class ColdSessionsResult(BaseModel):
    """What the job did, over every run of one scheduled execution (continue-as-new included)."""

    runs: int = 0
    pages: int = 0
    sessions: int = 0
    started: int = Field(0, description="Formations started (their outcome is on their own run)")
    ends_started: int = Field(0, description="Session ends started (ended, buffer not empty)")
    retry_later: int = Field(0, description="Not started, Temporal unreachable: next run")
    formed: int = 0
    nothing_due: int = Field(
        0,
        description="Ends not restarted: their last run completed, no message unformed, the "
        "buffer drafted since its newest reflection (in results of older runs: formations "
        "with nothing due)",
    )
    still_running: int = 0
    failed: int = 0
    messages_formed: int = 0
    purged: int = 0
    idle_before: datetime | None = None
    failures: list[SessionOutcome] = Field(default_factory=list)

    def add(self, outcomes: list[SessionOutcome]) -> None:
        for o in outcomes:
            self.sessions += 1
            self.messages_formed += o.messages_formed
            match o.outcome:
                case "started":
                    self.started += 1
                case "retry_later":
                    self.retry_later += 1
                case "formed":
                    self.formed += 1
                case "nothing_due":
                    self.nothing_due += 1
                case "still_running":
                    self.still_running += 1
                case "failed":
                    self.failed += 1
                    if len(self.failures) < _FAILURES_SHOWN:
                        self.failures.append(o)

    def summary(self) -> str:
        return (
            f"{self.sessions} cold session(s): {self.started} formation(s) started, "
            f"{self.failed} failed to start, {self.retry_later} left for the next run; "
            f"{self.ends_started} session end(s) finished; "
            f"{self.purged} ended session(s) purged; {self.runs} run(s), "
            f"{self.pages} page(s)"
        )


class ColdSessionsInput(BaseModel):
    """The schedule's input (settings of the moment it was created or updated), then what each run
    hands to the next one when it continues as new."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sessions: SessionSettings
    min_messages: int = Field(ge=1, description="A cold session has this many unformed messages")
    min_weighted_tokens: float = Field(
        ge=0, description="... or this many unformed weighted tokens"
    )
    retries: RetrySettings = RetrySettings()
    search_attributes: bool = Field(False, description="Tag the run with MnemosOutcome")
    pages_per_run: int = Field(PAGES_PER_RUN, ge=1)
    # Carried across continue-as-new.
    idle_before: datetime | None = None
    after: ColdCursor | None = None
    purge_done: bool = False
    # Left out of the payload while unset: the schedule's input stays what workers built before
    # FINISH_ENDED_PAGES decode (extra="forbid"), during a rolling deploy or a rollback.
    cold_done: bool = Field(False, exclude_if=lambda done: not done)
    ended_after: tuple[str, str] | None = Field(None, exclude_if=lambda after: after is None)
    so_far: ColdSessionsResult | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> ColdSessionsInput:
        return cls(
            sessions=settings.sessions,
            min_messages=settings.formation.min_messages,
            min_weighted_tokens=settings.formation.token_interval,
            retries=settings.retries,
            search_attributes=settings.temporal.search_attributes,
        )


def _form_options(r: RetrySettings, req: ColdFormRequest) -> dict[str, Any]:
    """The old path's options (its activity used to wait on the formations)."""
    rounds = math.ceil(len(req.sessions) / req.concurrency)
    return {
        **options.store(r),
        "start_to_close_timeout": timedelta(
            seconds=req.wait_seconds * rounds + r.store_timeout_seconds
        ),
        "heartbeat_timeout": timedelta(seconds=r.llm_heartbeat_seconds),
    }


@workflow.defn(name=COLD_SESSIONS_WORKFLOW)
class ColdSessionsWorkflow:
    @workflow.run
    async def run(self, inp: ColdSessionsInput) -> ColdSessionsResult:
        now = workflow.now()
        store = options.store(inp.retries)
        cfg = inp.sessions
        result = (inp.so_far or ColdSessionsResult()).model_copy(deep=True)
        result.runs += 1
        idle_before = inp.idle_before or now - timedelta(minutes=cfg.cold_after_minutes)
        result.idle_before = idle_before
        pages = 0

        if not inp.purge_done:
            ended_before = now - timedelta(days=cfg.ended_retention_days)
            while True:
                purged: list[str] = await workflow.execute_activity_method(
                    SessionActivities.purge_ended_sessions,
                    args=[ended_before, cfg.cold_page_size],
                    **store,
                )
                result.purged += len(purged)
                pages += 1
                if len(purged) < cfg.cold_page_size:
                    break
                if self._should_continue(inp, pages):
                    self._continue(inp, result, idle_before, after=None, purge_done=False)

        after = inp.after
        while not inp.cold_done:
            page: ColdPage = await workflow.execute_activity_method(
                SessionActivities.find_cold_sessions,
                ColdPageRequest(
                    idle_before=idle_before,
                    min_messages=inp.min_messages,
                    min_weighted_tokens=inp.min_weighted_tokens,
                    after=after,
                    limit=cfg.cold_page_size,
                ),
                **store,
            )
            result.pages += 1
            pages += 1
            if page.sessions:
                result.add(await self._form(inp, page))
                after = page.last
            if len(page.sessions) < cfg.cold_page_size:
                break
            if self._should_continue(inp, pages):
                self._continue(inp, result, idle_before, after=after, purge_done=True)

        if workflow.patched(FINISH_ENDED):
            if workflow.patched(FINISH_ENDED_PAGES):
                await self._finish_ended_pages(inp, idle_before, result, pages)
            else:
                await self._finish_ended(inp, idle_before, result)
        workflow.upsert_memo({"summary": result.summary(), "failed": result.failed})
        if inp.search_attributes:
            workflow.upsert_search_attributes(
                [OUTCOME.value_set("failures" if result.failed else "ok")]
            )
        if result.failed:
            # Each failure to start is logged by the activity with its session and error.
            workflow.logger.warning(
                "cold sessions run finished with failures to start",
                extra={"failed": result.failed, "summary": result.summary()},
            )
        else:
            workflow.logger.info("cold sessions run finished", extra={"summary": result.summary()})
        return result

    @staticmethod
    async def _form(inp: ColdSessionsInput, page: ColdPage) -> list[SessionOutcome]:
        cfg = inp.sessions
        if workflow.patched(START_ONLY):
            start = ColdFormRequest(sessions=page.sessions, concurrency=cfg.cold_concurrency)
            outcomes: list[SessionOutcome] = await workflow.execute_activity_method(
                SessionActivities.start_cold_formations, start, **options.store(inp.retries)
            )
            return outcomes
        req = ColdFormRequest(
            sessions=page.sessions,
            concurrency=cfg.cold_concurrency,
            wait_seconds=_FORMATION_WAIT_LLM_TIMEOUTS * inp.retries.llm_timeout_seconds,
        )
        outcomes = await workflow.execute_activity_method(
            SessionActivities.form_cold_sessions, req, **_form_options(inp.retries, req)
        )
        return outcomes

    @staticmethod
    async def _finish_ended(
        inp: ColdSessionsInput, idle_before: datetime, result: ColdSessionsResult
    ) -> None:
        """Start the EndSession of sessions ended (before the idle cut) whose session scope
        still buffers reflections: an end whose workflow never ran or failed. The first page
        only: runs scheduled before FINISH_ENDED_PAGES."""
        store = options.store(inp.retries)
        page: EndedPage = await workflow.execute_activity_method(
            SessionActivities.find_unfinished_ended_sessions,
            args=[idle_before, inp.sessions.cold_page_size],
            **store,
        )
        if not page.sessions:
            return
        outcomes: list[SessionOutcome] = await workflow.execute_activity_method(
            SessionActivities.start_session_ends,
            args=[page, inp.sessions.cold_concurrency],
            **store,
        )
        result.ends_started += sum(1 for o in outcomes if o.outcome == "started")
        result.add([o for o in outcomes if o.outcome != "started"])

    async def _finish_ended_pages(
        self,
        inp: ColdSessionsInput,
        idle_before: datetime,
        result: ColdSessionsResult,
        pages: int,
    ) -> None:
        """Start the EndSession of every session ended (before the idle cut) with unformed
        messages or a session buffer not empty: an end whose workflow never ran or failed. Page by
        page after a cursor, so that ends still running or failing do not hold back the others."""
        store = options.store(inp.retries)
        size = inp.sessions.cold_page_size
        after = inp.ended_after
        while True:
            page: EndedPage = await workflow.execute_activity_method(
                SessionActivities.find_unfinished_ended_sessions,
                args=[idle_before, size, after],
                **store,
            )
            pages += 1
            if page.sessions:
                outcomes: list[SessionOutcome] = await workflow.execute_activity_method(
                    SessionActivities.start_session_ends,
                    args=[page, inp.sessions.cold_concurrency],
                    **store,
                )
                result.ends_started += sum(1 for o in outcomes if o.outcome == "started")
                result.add([o for o in outcomes if o.outcome != "started"])
                after = page.sessions[-1]
            if len(page.sessions) < size:
                return
            if self._should_continue(inp, pages):
                self._continue(
                    inp, result, idle_before, after=None, purge_done=True, ended_after=after
                )

    @staticmethod
    def _should_continue(inp: ColdSessionsInput, pages: int) -> bool:
        return pages >= inp.pages_per_run or workflow.info().is_continue_as_new_suggested()

    @staticmethod
    def _continue(
        inp: ColdSessionsInput,
        result: ColdSessionsResult,
        idle_before: datetime,
        *,
        after: ColdCursor | None,
        purge_done: bool,
        ended_after: tuple[str, str] | None = None,
    ) -> NoReturn:
        workflow.upsert_memo({"summary": f"in progress: {result.summary()}"})
        workflow.continue_as_new(
            inp.model_copy(
                update={
                    "idle_before": idle_before,
                    "after": after,
                    "purge_done": purge_done,
                    "cold_done": ended_after is not None,
                    "ended_after": ended_after,
                    "so_far": result,
                }
            )
        )
