"""FormMemories: one agent's memory formation for one session, durable step by step.

Started with signal-with-start under the id ``form:{agent}:{session}``, so at most one runs per
(session, agent). A request that arrives while it runs is a signal that makes it go round again, so
messages recorded during a run are formed by the next pass, never lost and never formed twice: each
pass reads the range after the stored cursor, and the cursor moves only in the same atomic write that
stores that range's memories.

A backlog drains window after window without waiting. A window whose extraction cannot carry it
(its answer overflowed or filled its bound, or stayed unusable) is split: the pass is dropped
uncommitted and the window loaded again with half its messages, down to one message; the drain forms
the rest at that size or, once a split ended in a message passed over and the next one formed, at
the size of before (workflows/drain.py). A drain that continues as new carries that, and what it
did, to the next run, whose result counts the whole drain; each run's memo says what it did itself.
A single message that no retry can extract is passed over, visibly (docs/backlog.md):
in the run's summary, memo and metric, and in the store with the window's memories
(memory/degraded.py), where `mnemos degraded` finds it and re-forms it. A message longer than the
formation budget is read slice by slice, every slice's memories in the window's one commit
(workflows/form_steps.py, memory/pipeline/slices.py); one stating more facts than one answer
carries, in halves, bounded (workflows/form_pieces.py, memory/pipeline/pieces.py).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows.backoff import jittered
from workflows.form_failures import Split, error_type
from workflows.form_steps import FormationSteps

with workflow.unsafe.imports_passed_through():
    from activities.consolidation import ConsolidationActivities
    from activities.errors import CONFLICT, STALE_DECISION
    from activities.formation import FormationActivities
    from memory.models import ScopeKey
    from memory.pipeline.types import (
        DEGRADED,
        CandidatesResult,
        CommitResult,
        FormationRequest,
        NewFact,
        ReflectionsResult,
        SplitChain,
        Window,
    )
    from workflows import drain, options
    from workflows.form_versions import (
        AGAIN_AFTER_ERASURE,
        AGAIN_KEEPS_FORCE,
        CAN_KEEPS_FORCE,
        DRAIN_TOTALS,
        DUE_AFTER_COMMIT,
        LOCAL_READS,
        SPLIT_PASSED_OVER,
        SPLIT_WINDOWS,
        STALE_BACKOFF,
    )
    from workflows.naming import AGENT_ID, FORM_WORKFLOW, OUTCOME
    from workflows.summary import FormationSummary

# A stale dedup decision (another session changed a candidate fact meanwhile) is decided again:
# three times before STALE_BACKOFF; from it on, with backoff and jitter until
# ``retries.stale_decision_seconds`` have passed, so contending sessions commit one after another
# instead of going stale in lockstep.
_DECISION_ATTEMPTS = 3
_BACKOFF_FIRST_SECONDS = 0.2
_BACKOFF_MAX_SECONDS = 10.0


def _backoff(attempt: int) -> timedelta:
    return jittered(_BACKOFF_FIRST_SECONDS, _BACKOFF_MAX_SECONDS, attempt)


@workflow.defn(name=FORM_WORKFLOW)
class FormMemoriesWorkflow(FormationSteps):
    def __init__(self) -> None:
        self._requested = False
        self._force = False
        self._llm: dict[str, Any] = {}
        self._store: dict[str, Any] = {}
        self._local: dict[str, Any] | None = None  # the local reads' options, from LOCAL_READS on
        self._stale_seconds = 600.0
        # Scope keys the drain's commits made due, requested once when the drain ends.
        self._due: dict[str, ScopeKey] = {}
        # The last pass's commit left the session due (CommitResult.due_after).
        self._due_after = False
        # The last pass's commit was discarded for an erasure: its window is formed again.
        self._form_again = False

    @workflow.signal
    def request(self, force: bool = False) -> None:
        """Another trigger for this (session, agent): go round once more after the current pass."""
        self._requested = True
        self._force = self._force or force

    @workflow.run
    async def run(self, req: FormationRequest) -> FormationSummary:
        started = workflow.now()
        self._llm = options.llm(req.retries, req.llm_task_queue)
        self._store = options.store(req.retries)
        if workflow.patched(LOCAL_READS):
            self._local = options.local_store(req.retries)
        self._stale_seconds = req.retries.stale_decision_seconds
        summary = FormationSummary()  # this run's; its result counts the earlier runs' too
        force = req.force
        limit = req.max_messages  # None: the settings' window; set while a split part drains
        chain = req.split  # the split the drain goes back from once a message was passed over
        while True:
            self._requested, self._force, self._due_after = False, False, False
            self._form_again = False
            window = await self._load(
                req.model_copy(
                    update={"force": force, "max_messages": limit, "split": None, "drained": None}
                )
            )
            split = False
            if window is not None:
                formations, passed = summary.formations, summary.passed_over
                try:
                    await self._form(window, summary)
                except Split:
                    # The rest of the drain reads parts of this size: a dense backlog is split
                    # once, not window after window.
                    chain = drain.after_split(chain, limit, window)
                    split, limit = True, drain.part_size(window)
                    summary.splits += 1
                else:
                    if summary.formations > formations:  # committed, not formed again or raced
                        chain, limit = self._after_formed(
                            chain, limit, window, summary.passed_over > passed
                        )
            if split or (window is not None and window.more_pending):
                force = True  # drain a backlog longer than one window before anything else
            elif self._form_again:
                # The same window again, as it was asked, or forced if asked so meanwhile.
                if self._force and workflow.patched(AGAIN_KEEPS_FORCE):
                    force = True
            elif self._requested:
                force, limit, chain = self._force, None, None
            elif self._due_after and workflow.patched(DUE_AFTER_COMMIT):
                force, limit, chain = False, None, None
            else:
                await self._request_consolidation()  # once per drain; a request may arrive
                if not self._requested:
                    break
                force, limit, chain = self._force, None, None
            if workflow.info().is_continue_as_new_suggested():
                await self._request_consolidation()  # a request may arrive meanwhile
                forced = self._requested and self._force
                if forced and not force and workflow.patched(CAN_KEEPS_FORCE):
                    force = True
                if workflow.patched(SPLIT_WINDOWS):
                    self._record(summary, started)  # each run of a long drain says what it did
                carried: dict[str, Any] = {"force": force, "max_messages": limit}
                if workflow.patched(DRAIN_TOTALS):
                    # The next run's result counts this one's too: whoever waits on the drain
                    # (a session end, `mnemos form`) reads the last run's. Bounded (LLM calls
                    # tallied, the newest degraded steps): the same command as before, its input
                    # no longer growing with every run (a replay does not compare inputs).
                    done = drain.carried(req.drained, summary)
                    carried |= {"split": chain, "drained": done}
                workflow.continue_as_new(req.model_copy(update=carried))
        self._record(summary, started)  # this run's memo and outcome: what it did itself
        await workflow.wait_condition(workflow.all_handlers_finished)
        return drain.merged(req.drained, summary)  # the drain's totals, bounded as carried

    def _after_formed(
        self, chain: SplitChain | None, limit: int | None, window: Window, passed_over: bool
    ) -> tuple[SplitChain | None, int | None]:
        """The split in progress and the drain's window size after ``window`` was committed."""
        if (
            chain is not None
            and drain.restores(chain, passed_over)
            and workflow.patched(SPLIT_PASSED_OVER)
        ):
            return None, chain.before  # a lone message failed it: the rest reads whole windows
        return drain.after_formed(chain, window, passed_over), limit

    async def _load(self, req: FormationRequest) -> Window | None:
        if self._local is not None:
            return await workflow.execute_local_activity_method(
                FormationActivities.load_window, req, **self._local
            )
        return await workflow.execute_activity_method(
            FormationActivities.load_window, req, **self._store
        )

    async def _candidates(self, window: Window, new_facts: list[NewFact]) -> CandidatesResult:
        if self._local is not None:
            return await workflow.execute_local_activity_method(
                FormationActivities.find_similar_facts, args=[window, new_facts], **self._local
            )
        return await workflow.execute_activity_method(
            FormationActivities.find_similar_facts, args=[window, new_facts], **self._store
        )

    def _record(self, summary: FormationSummary, started: datetime) -> None:
        """The run's outcome attribute and memo, where operators (and `mnemos degraded`) look."""
        summary.duration_ms = int((workflow.now() - started).total_seconds() * 1000)
        if (
            workflow.info().typed_search_attributes.get(AGENT_ID) is not None
        ):  # the namespace has our attributes
            outcome = "formed" if summary.formations else "nothing_due"
            workflow.upsert_search_attributes(
                [OUTCOME.value_set(DEGRADED if summary.degraded else outcome)]
            )
        workflow.upsert_memo(summary.memo())

    async def _form(self, window: Window, summary: FormationSummary) -> None:
        mark = len(summary.degraded)  # this window's degraded steps are those noted from here
        extracted = await self._extract_all(window, summary)
        summary.llm_calls += extracted.llm
        summary.facts_extracted += len(extracted.facts)
        new_facts = extracted.facts
        reflections: ReflectionsResult | None = None
        first = workflow.now()
        attempt = 0
        while True:
            attempt += 1
            candidates = await self._candidates(window, new_facts)
            summary.embedding_calls += candidates.embedding_calls
            decided = await self._decide(window, new_facts, candidates, summary)
            summary.llm_calls += decided.llm
            summary.embedding_calls += decided.embedding_calls
            if reflections is None:
                formed = [
                    d.final_text for d in decided.decisions if d.final_text and d.event != "NONE"
                ]
                extracted_reflections = await self._reflect_all(window, formed, summary)
                summary.llm_calls += extracted_reflections.llm
                reflections = extracted_reflections
            # Recorded in the store with the memories, where they outlast the run and its memo;
            # none: the arguments of older code (the same command, replayed or not).
            steps = summary.degraded[mark:]
            try:
                committed: CommitResult = await workflow.execute_activity_method(
                    FormationActivities.commit_formation,
                    args=[
                        window,
                        new_facts,
                        decided.decisions,
                        reflections.reflections,
                        candidates,
                        *([steps] if steps else []),
                    ],
                    **self._store,
                )
            except ActivityError as err:
                kind = error_type(err)
                if kind == STALE_DECISION and await self._again(attempt, first):
                    summary.decisions_redone += 1
                    continue
                if kind == CONFLICT:
                    # The cursor moved under us: the range was formed already. Reload, don't redo.
                    workflow.logger.warning(
                        "cursor moved during formation", extra={"formation": window.formation_id}
                    )
                    return
                raise
            if committed.discarded_for_erasure and workflow.patched(AGAIN_AFTER_ERASURE):
                # Nothing was written: the messages of this window that remain are formed again.
                workflow.logger.info(
                    "user forgotten during formation: window formed again",
                    extra={"formation": window.formation_id},
                )
                self._form_again = True
                return
            summary.add_decisions(decided.decisions)
            summary.add_commit(window.message_count, committed)
            self._due_after = committed.due_after
            due = committed.due_for_consolidation
            if due and workflow.patched(SPLIT_WINDOWS):
                self._due.update((key.key, key) for key in due)  # requested when the drain ends
            elif due:
                await workflow.execute_activity_method(
                    ConsolidationActivities.request_consolidation,
                    args=[due, False],
                    **self._store,
                )
            return

    async def _request_consolidation(self) -> None:
        """Ask the consolidator of every key the drain made due, once (each consolidates the whole
        buffer of its scope, however many windows filled it)."""
        if not self._due:
            return
        keys, self._due = list(self._due.values()), {}
        await workflow.execute_activity_method(
            ConsolidationActivities.request_consolidation, args=[keys, False], **self._store
        )

    async def _again(self, attempt: int, first: datetime) -> bool:
        """Whether to decide a stale decision again (after a backoff, from STALE_BACKOFF on)."""
        if not workflow.patched(STALE_BACKOFF):
            if attempt >= _DECISION_ATTEMPTS:
                return False
            workflow.logger.info(
                "dedup decision went stale, deciding again", extra={"attempt": attempt}
            )
            return True
        if (workflow.now() - first).total_seconds() >= self._stale_seconds:
            return False
        delay = _backoff(attempt)
        workflow.logger.info(
            "dedup decision went stale, deciding again after a backoff",
            extra={"attempt": attempt, "delay_s": delay.total_seconds()},
        )
        await workflow.sleep(delay)
        return True
