"""ConsolidateScope: the single consolidator of one scope key (agent, agent+user or agent+session).

Formations signal-with-start it under ``consolidate:{scope key}``, so consolidations of one key never
overlap, across every worker and session. Each pass drafts a blob from the buffered reflections
(validated before anything is stored) and applies it with a compare-and-set that also marks exactly
those reflections absorbed; if the blob moved, or one of those reflections was edited, meanwhile,
it drafts again: at once four times, then after growing waits until retries.stale_decision_seconds
have passed, then it gives up visibly, the buffer kept. A draft that failed through its retries on a transient error (the provider down)
is tried again after a durable, growing wait, for up to two days: nothing else would ask again
for a user or agent scope until its next reflection. A draft whose output stayed unusable (a
content filter refusing one reflection's text) is split: each half of the buffer is consolidated
on its own, down to single reflections; one that no draft can take is set aside, visibly, once
the rest consolidated (so the blob itself is not what fails), and no longer holds back the scope.
A draft merges at most a batch of the buffer, oldest first; while more is buffered, it drafts
again, so a buffer grown large (a long outage on a busy scope) is merged in turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.backoff import jittered

with workflow.unsafe.imports_passed_through():
    from activities.consolidation import ConsolidationActivities
    from activities.errors import CONFLICT, INPUT_REFUSED, UNUSABLE_OUTPUT, WINDOW_TOO_LARGE
    from memory.pipeline.types import (
        BufferedReflection,
        ConsolidationDraft,
        ConsolidationRequest,
    )
    from workflows import options
    from workflows.consolidate_parts import carried, halves, summary_so_far, transient
    from workflows.naming import CONSOLIDATE_WORKFLOW, DEGRADED_METRIC, WAITING_UNTIL
    from workflows.paid import paid_for
    from workflows.summary import ConsolidationSummary

_CAS_ATTEMPTS = 5
# Histories recorded before the fallback fail the run where it takes it (workflow.patched).
DEGRADED_FALLBACK = "degraded-fallback"
# From it on, a draft whose retries ran out on a transient error waits (a durable timer) and drafts
# again instead of failing the run; older histories failed there (workflow.patched).
OUTAGE_WAIT = "consolidation-outage-wait"
# The waits: 5 minutes doubling to 4 hours, jittered (many scopes fail together in an outage and
# should not all come back at once), until two days have passed since the first failure: about 17
# waits, a few hundred history events, so no continue-as-new is needed for them.
_OUTAGE_FIRST_SECONDS = 300.0
_OUTAGE_MAX_SECONDS = 4 * 3600.0
_OUTAGE_GIVE_UP_SECONDS = 2 * 86400.0
# From it on, conflicts past _CAS_ATTEMPTS (edits landing during each draft) are drafted again after
# a growing wait (1 s doubling to a minute, jittered), for retries.stale_decision_seconds; older
# histories failed the run at the fifth (workflow.patched).
CONFLICT_BACKOFF = "consolidation-conflict-backoff"
_CONFLICT_FIRST_SECONDS = 1.0
_CONFLICT_MAX_SECONDS = 60.0
# From it on, a draft whose output stayed unusable splits the buffer instead of leaving it all
# for the next request (which met the same refusal, for ever); older histories took the
# fallback at once (workflow.patched).
SPLIT_UNUSABLE = "consolidation-split-unusable"
# From it on (asked at the start of each run), a draft merges the buffer's oldest batch and the
# run drafts again while more is buffered, leaving out what its splits kept; older histories read
# the whole buffer into one draft and, split, into one step result: past about 16,000 reflections
# that result exceeded Temporal's 2 MB payload limit and the scope never consolidated again.
IN_BATCHES = "consolidation-batches-from-start"
# A first version (27f3504) asked under this id after a run's first pass whether to go round while
# more was buffered, its drafts reading a batch of their own accord: its runs replay and go on so.
AFTER_A_PASS = "consolidation-in-batches"
# Reflections kept buffered by this consolidation's splits, which its later batches leave out (a
# few per split): past this many the run stops going round, the rest left for the next request.
_KEPT_MOST = 200


@dataclass(frozen=True)
class _Unusable:
    """A draft's output stayed unusable through its retries (or no retry can change it)."""

    reason: str
    refused: bool = False  # the provider refused the input (InputRefused)


@workflow.defn(name=CONSOLIDATE_WORKFLOW)
class ConsolidateScopeWorkflow:
    def __init__(self) -> None:
        self._requested = False
        self._force = False
        self._llm: dict[str, Any] = {}
        self._store: dict[str, Any] = {}
        # The current pass's transient draft failures: since when, how many waits so far.
        self._outage_since: datetime | None = None
        self._outage_waits = 0
        # The last pass left more in the buffer than it drafted, and took some of it.
        self._more = False
        self._in_batches = False
        self._kept: list[str] = []  # what this consolidation's splits kept buffered

    @workflow.signal
    def request(self, force: bool = False) -> None:
        self._requested = True
        self._force = self._force or force

    @workflow.run
    async def run(self, req: ConsolidationRequest) -> ConsolidationSummary:
        self._llm = options.llm(req.retries, req.llm_task_queue)
        self._store = options.store(req.retries)
        self._in_batches = workflow.patched(IN_BATCHES)
        self._kept = list(req.skip_ids)
        summary = summary_so_far(req.carried)
        force = req.force
        while True:
            self._requested, self._force, self._more = False, False, False
            this = {"force": force, "in_batches": self._in_batches, "skip_ids": self._kept}
            await self._consolidate(req.model_copy(update={**this, "carried": None}), summary)
            batched = self._in_batches or (self._more and workflow.patched(AFTER_A_PASS))
            more = self._more and batched and len(self._kept) <= _KEPT_MOST
            if not (self._requested or more):
                break
            force = (force and more) or self._force  # the rest of a forced buffer stays forced
            if workflow.info().is_continue_as_new_suggested():
                carry = {"force": force, "skip_ids": self._kept, "carried": carried(summary)}
                workflow.continue_as_new(req.model_copy(update=carry))
        degraded = f"; DEGRADED: {summary.degraded}" if summary.degraded else ""
        if summary.set_aside:  # the ids a person looks up to correct them (a few: a memo is small)
            degraded += f"; set aside: {', '.join(summary.set_aside[:10])}"
        workflow.upsert_memo(
            {
                "summary": f"{summary.consolidations} consolidation(s), {summary.absorbed} reflections absorbed, version {summary.version}{degraded}"
            }
        )
        await workflow.wait_condition(workflow.all_handlers_finished)
        return summary

    async def _consolidate(self, req: ConsolidationRequest, summary: ConsolidationSummary) -> None:
        outcome = await self._pass(req, summary)
        if isinstance(outcome, _Unusable):
            await self._split(req, summary, outcome)

    async def _split(
        self, req: ConsolidationRequest, summary: ConsolidationSummary, whole: _Unusable
    ) -> None:
        """Consolidate the buffer in parts, oldest first, halving each part whose draft stays
        unusable, as a formation splits its window, within a budget of drafts that finds one
        such reflection (what is left waits for the next request: a model failing on everything
        costs a few drafts, not one per reflection).

        A single reflection the provider refuses (InputRefused: no retry changes it) is set
        aside once its text is shown to be what is refused: another part consolidated, or the
        blob drafted alone is not refused (if it is, the split stops: no reflection is to
        blame). One whose output is otherwise unusable (over the word limit, malformed) stays
        buffered: the blob or the model may be the cause."""
        buffer: list[BufferedReflection]
        if self._in_batches:  # the batch whose draft stayed unusable
            buffer = await workflow.execute_activity_method(
                ConsolidationActivities.buffered_batch, req, **self._store
            )
        else:
            buffer = await workflow.execute_activity_method(
                ConsolidationActivities.buffered_reflections, req.key, **self._store
            )
        parts = halves(buffer) if len(buffer) > 1 else [buffer] if buffer else []
        budget = 2 * (len(buffer) - 1).bit_length() + 1
        refused: list[BufferedReflection] = []
        kept: list[BufferedReflection] = []
        consolidated, blob_refused, blob_fine, drafts = False, False, False, 0
        reason = whole.reason
        while parts and drafts < budget and not blob_refused:
            part = parts.pop(0)
            if part is buffer:  # a buffer of one: its draft was the whole one
                outcome: _Unusable | bool = whole
            else:
                drafts += 1
                before = summary.consolidations
                ids = [r.reflection_id for r in part]
                outcome = await self._pass(
                    req.model_copy(update={"only_ids": ids, "force": True}), summary
                )
                if outcome is False:
                    return  # gave up on an outage or on edits, visibly; the buffer is kept
                consolidated = consolidated or summary.consolidations > before
            if not isinstance(outcome, _Unusable):
                continue
            reason = outcome.reason
            if len(part) > 1:
                parts[:0] = halves(part)
            elif not outcome.refused:
                kept.append(part[0])
            else:
                if not (consolidated or blob_fine):  # asked once: the blob does not change here
                    blob_refused = await self._blob_refused(req, summary)
                    blob_fine = not blob_refused
                (kept if blob_refused else refused).append(part[0])
        aside = [r.reflection_id for r in refused if await self._set_aside(req, r)]
        # Only progress (the buffer shrank) asks for another pass: a model failing on everything
        # stops here; what no draft took is left out of the later batches.
        self._more = consolidated or bool(aside)
        self._kept += [r.reflection_id for r in kept]
        summary.set_aside += aside
        left = sum(len(p) for p in parts)
        notes = [
            *(
                [f"{len(aside)} reflection(s) set aside, the provider refused them"]
                if aside
                else []
            ),
            *(["the provider refuses the blob or the prompt itself"] if blob_refused else []),
            *(
                [f"{len(refused) + len(kept) - len(aside)} kept buffered, no draft took them"]
                if len(refused) + len(kept) > len(aside)
                else []
            ),
            *([f"{left} left for the next request after {drafts} drafts"] if left else []),
        ]
        if notes:
            self._degrade(
                req, summary, f"{'; '.join(notes)}: {reason}", "consolidation split its buffer"
            )

    async def _blob_refused(self, req: ConsolidationRequest, summary: ConsolidationSummary) -> bool:
        """Whether the provider refuses the blob drafted alone, without any reflection (the
        draft is not stored)."""
        probe = req.model_copy(update={"only_ids": None, "force": True, "blob_only": True})
        draft = await self._draft(probe, summary)
        if draft is None:
            return True  # the provider stayed down: unknown, so nothing is set aside
        if isinstance(draft, ConsolidationDraft):
            summary.llm_calls += draft.llm
        return isinstance(draft, _Unusable) and draft.refused

    async def _set_aside(self, req: ConsolidationRequest, r: BufferedReflection) -> bool:
        done: bool = await workflow.execute_activity_method(
            ConsolidationActivities.set_aside_reflection, args=[req.key, r], **self._store
        )
        return done

    async def _pass(
        self, req: ConsolidationRequest, summary: ConsolidationSummary
    ) -> _Unusable | bool:
        """Draft and apply once: True when done (consolidated, or nothing to), False when it gave
        up visibly (an outage or edits outlasted their waits), _Unusable when the draft's output
        stayed unusable (only from SPLIT_UNUSABLE on)."""
        self._outage_since, self._outage_waits = None, 0
        first_conflict: datetime | None = None
        attempt = 0
        while True:
            attempt += 1
            draft = await self._draft(req, summary)
            if draft is None:
                return False
            if isinstance(draft, _Unusable):
                return draft
            summary.llm_calls += draft.llm
            if draft.content is None:
                return True
            try:
                result = await workflow.execute_activity_method(
                    ConsolidationActivities.apply_consolidation, draft, **self._store
                )
            except ActivityError as err:
                cause = err.cause
                if not (isinstance(cause, ApplicationError) and cause.type == CONFLICT):
                    raise
                first_conflict = first_conflict or workflow.now()
                if attempt < _CAS_ATTEMPTS:
                    workflow.logger.info(
                        "blob or reflections changed since the draft, drafting again",
                        extra={"attempt": attempt, "reason": str(cause)[:300]},
                    )
                    continue
                # Older histories failed the run at the last attempt (workflow.patched).
                if not workflow.patched(CONFLICT_BACKOFF):
                    raise
                if await self._conflict_wait(req, summary, attempt, first_conflict, str(cause)):
                    continue
                return False
            else:
                summary.consolidations += 1
                summary.absorbed += result.absorbed
                summary.version = result.version
                self._more = draft.more
                return True

    async def _conflict_wait(
        self,
        req: ConsolidationRequest,
        summary: ConsolidationSummary,
        attempt: int,
        first: datetime,
        reason: str,
    ) -> bool:
        """After a person's edits met _CAS_ATTEMPTS drafts in a row (a review pass on the memory
        page while the model drafts), draft again after a growing wait, as stale dedup decisions
        are, until ``retries.stale_decision_seconds`` have passed since the first conflict; then
        give up visibly, the buffer (every correction in it) kept for the next request."""
        waited = (workflow.now() - first).total_seconds()
        if waited >= req.retries.stale_decision_seconds:
            why = f"reflections or blob kept changing for {waited:.0f}s, gave up after {attempt} drafts"
            self._degrade(req, summary, f"{why}: {reason}", "consolidation gave up: buffer kept")
            return False
        n = attempt - _CAS_ATTEMPTS + 1
        delay = jittered(_CONFLICT_FIRST_SECONDS, _CONFLICT_MAX_SECONDS, n)
        workflow.logger.info(
            "reflections or blob changed since the draft again, drafting after a wait",
            extra={"attempt": attempt, "delay_s": delay.total_seconds(), "reason": reason[:300]},
        )
        await workflow.sleep(delay)
        return True

    async def _draft(
        self, req: ConsolidationRequest, summary: ConsolidationSummary
    ) -> ConsolidationDraft | _Unusable | None:
        """The draft; _Unusable when its output stayed unusable (the caller splits the buffer);
        None when the pass took its fallback (the buffer stays as it is)."""
        while True:
            try:
                draft: ConsolidationDraft = await workflow.execute_activity_method(
                    ConsolidationActivities.draft_consolidation, req, **self._llm
                )
                return draft
            except ActivityError as err:
                summary.llm_calls += paid_for(err)  # the run goes on (or fails: then harmless)
                cause = err.cause
                if (
                    isinstance(cause, ApplicationError)
                    and cause.type == WINDOW_TOO_LARGE
                    and workflow.patched(SPLIT_UNUSABLE)
                ):
                    return _Unusable(str(cause))  # a buffer too big for the model's context
                if (
                    isinstance(cause, ApplicationError)
                    and cause.type in UNUSABLE_OUTPUT
                    and workflow.patched(DEGRADED_FALLBACK)
                ):
                    if workflow.patched(SPLIT_UNUSABLE):
                        return _Unusable(str(cause), refused=cause.type == INPUT_REFUSED)
                    # The next formation that finds the buffer due asks again; for an ended
                    # session's scope, so does its end, which the cold job restarts once a message
                    # is pending or a reflection buffered since (activities/sessions.py _end_left).
                    self._degrade(
                        req,
                        summary,
                        str(cause),
                        "consolidation output unusable after retries: buffer kept",
                    )
                    return None
                if not (transient(err) and workflow.patched(OUTAGE_WAIT)):
                    raise
                if not await self._wait_out(req, summary, str(cause or err)):
                    return None

    async def _wait_out(
        self, req: ConsolidationRequest, summary: ConsolidationSummary, reason: str
    ) -> bool:
        """Wait before drafting again after a transient failure; False once two days have passed
        since the first (the pass gives up, visibly: the buffer is kept for the next request)."""
        now = workflow.now()
        self._outage_since = self._outage_since or now
        delay = jittered(_OUTAGE_FIRST_SECONDS, _OUTAGE_MAX_SECONDS, self._outage_waits + 1)
        down = now - self._outage_since
        if (down + delay).total_seconds() > _OUTAGE_GIVE_UP_SECONDS:
            hours = down.total_seconds() / 3600
            why = f"LLM step failing for {hours:.0f}h, gave up after {self._outage_waits} waits"
            self._degrade(req, summary, f"{why}: {reason}", "consolidation gave up: buffer kept")
            return False
        self._outage_waits += 1
        workflow.logger.warning(
            "consolidation failed on a transient error, drafting again after a wait",
            extra={
                "scope_key": req.key.key,
                "wait_s": delay.total_seconds(),
                "reason": reason[:300],
            },
        )
        minutes = f"{delay.total_seconds() / 60:.0f}"
        waiting = f"waiting {minutes} min to draft again (wait {self._outage_waits})"
        # Replay-safe: the memo's content is not compared on replay, its command is the same.
        until = (now + delay).isoformat()
        workflow.upsert_memo({"summary": f"{waiting}: {reason[:200]}", WAITING_UNTIL: until})
        await workflow.sleep(delay)
        return True

    def _degrade(
        self, req: ConsolidationRequest, summary: ConsolidationSummary, reason: str, message: str
    ) -> None:
        summary.degraded = reason[:500]
        workflow.logger.warning(
            message,
            extra={"scope_key": req.key.key, "reason": summary.degraded},
        )
        workflow.metric_meter().create_counter(
            DEGRADED_METRIC, "Formation steps that took their fallback", "steps"
        ).add(1, {"step": "consolidate"})
