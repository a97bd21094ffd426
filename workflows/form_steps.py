"""FormMemories' LLM steps and what it does when one fails: a window too large for a step is split,
a single message (or one slice of a message longer than the budget) that no retry can extract is
passed over, visibly, and a step whose output stayed unusable takes its fallback.

A message longer than the formation budget is read slice by slice (memory/pipeline/slices.py says
why here, in the workflow): one extraction activity per slice, its index an argument, the slices'
results merged before the dedup and the one commit. Runs recorded before SLICED_MESSAGES never
loaded a window of more than one slice, and replay as they ran.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.errors import SPLITS_WINDOW, UNUSABLE_OUTPUT
    from activities.formation import FormationActivities
    from memory.pipeline.slices import merge_facts, merge_reflections
    from memory.pipeline.types import (
        CandidatesResult,
        DecisionsResult,
        ExtractedFactsResult,
        NewFact,
        ReflectionsResult,
        Window,
    )
    from workflows.form_versions import DEGRADED_FALLBACKS, SLICED_MESSAGES, SPLIT_WINDOWS
    from workflows.naming import DEGRADED_METRIC
    from workflows.summary import FormationSummary


def error_type(err: ActivityError) -> str | None:
    cause = err.cause
    return cause.type if isinstance(cause, ApplicationError) else None


class Split(Exception):
    """This window cannot be formed as one: load it again with fewer messages."""


def _splits(err: ActivityError) -> bool:
    """The extraction cannot carry its window, and no retry of the same window can change that."""
    return error_type(err) in SPLITS_WINDOW and workflow.patched(SPLIT_WINDOWS)


def _degrades(err: ActivityError) -> bool:
    """The model's output stayed unusable through the step's retries: take the step's fallback
    (recorded histories of older runs failed here, and replay so)."""
    return error_type(err) in UNUSABLE_OUTPUT and workflow.patched(DEGRADED_FALLBACKS)


def _sliced(window: Window) -> bool:
    """Whether the window's steps read it slice by slice (a message longer than the budget)."""
    return window.slices > 1 and workflow.patched(SLICED_MESSAGES)


class FormationSteps:
    """The steps of one pass, as FormMemoriesWorkflow runs them (its options set by its run)."""

    _llm: dict[str, Any]
    _store: dict[str, Any]

    def _degraded(
        self,
        summary: FormationSummary,
        window: Window,
        step: str,
        err: Exception,
        part: int | None = None,
    ) -> None:
        reason = str(err.cause) if isinstance(err, ActivityError) and err.cause else str(err)
        if part is not None:
            reason = f"slice {part + 1} of {window.slices}: {reason}"
        summary.add_degraded(window.after_seq, window.upto_seq, step, reason)
        workflow.logger.warning(
            "model output unusable after retries: fallback taken",
            extra={"step": step, "reason": reason, "formation": window.formation_id},
        )
        workflow.metric_meter().create_counter(
            DEGRADED_METRIC, "Formation steps that took their fallback", "steps"
        ).add(1, {"step": step})

    def _passed_over(
        self,
        summary: FormationSummary,
        window: Window,
        step: str,
        err: ActivityError,
        part: int | None = None,
    ) -> None:
        """One message (or one slice of it) that no retry could extract: formed without this
        step's memories, recorded where operators look (summary, memo, metric, outcome; `mnemos
        degraded`, whose re-form reads every slice of the message again)."""
        self._degraded(summary, window, step, err, part)
        summary.passed_over += 1

    def _split(self, window: Window, step: str, err: ActivityError) -> Split:
        workflow.logger.info(
            "window split: the step cannot carry it",
            extra={
                "step": step,
                "messages": window.message_count,
                "reason": str(err.cause or err)[:300],
                "formation": window.formation_id,
            },
        )
        return Split()

    async def _extract_all(self, window: Window, summary: FormationSummary) -> ExtractedFactsResult:
        """The window's facts: those of every slice of a message longer than the budget, merged."""
        if not _sliced(window):
            return await self._extract(window, summary)
        summary.sliced_messages += 1
        summary.slices_read += window.slices
        workflow.logger.info(
            "a message longer than the budget is read in slices",
            extra={"slices": window.slices, "formation": window.formation_id},
        )
        parts = [await self._extract(window, summary, part) for part in range(window.slices)]
        return merge_facts(parts)

    async def _extract(
        self, window: Window, summary: FormationSummary, part: int | None = None
    ) -> ExtractedFactsResult:
        """A window too large for one answer is split; a single message (or slice) passed over.
        Histories of older runs took the fallback: no facts from the whole window."""
        try:
            if part is None:
                return await workflow.execute_activity_method(
                    FormationActivities.extract_facts, window, **self._llm
                )
            return await workflow.execute_activity_method(
                FormationActivities.extract_facts, args=[window, part], **self._llm
            )
        except ActivityError as err:
            if _splits(err):
                if window.message_count > 1 and part is None:
                    raise self._split(window, "extract_facts", err) from err
                self._passed_over(summary, window, "extract_facts", err, part)
                return ExtractedFactsResult(facts=[])
            if not _degrades(err):
                raise
            self._degraded(summary, window, "extract_facts", err, part)
            return ExtractedFactsResult(facts=[])

    async def _decide(
        self,
        window: Window,
        new_facts: list[NewFact],
        candidates: CandidatesResult,
        summary: FormationSummary,
    ) -> DecisionsResult:
        """Fallback: every new fact added unmerged, flagged (no LLM)."""
        try:
            return await workflow.execute_activity_method(
                FormationActivities.decide_fact_changes,
                args=[window, new_facts, candidates],
                **self._llm,
            )
        except ActivityError as err:
            if not _degrades(err):
                raise
            self._degraded(summary, window, "decide_fact_changes", err)
            reason = summary.degraded[-1].reason
            return await workflow.execute_activity_method(
                FormationActivities.add_facts_undecided,
                args=[window, new_facts, reason],
                **self._store,
            )

    async def _reflect_all(
        self, window: Window, formed: list[str], summary: FormationSummary
    ) -> ReflectionsResult:
        """The window's reflections: those of every slice, merged (as _extract_all)."""
        if not _sliced(window):
            return await self._reflect(window, formed, summary)
        parts = [
            await self._reflect(window, formed, summary, part) for part in range(window.slices)
        ]
        return merge_reflections(parts)

    async def _reflect(
        self,
        window: Window,
        formed: list[str],
        summary: FormationSummary,
        part: int | None = None,
    ) -> ReflectionsResult:
        """As _extract: split, or a single message (or slice) passed over (older runs: no
        reflections from the whole window, its facts still formed)."""
        args: list[Any] = [window, formed] if part is None else [window, formed, part]
        try:
            return await workflow.execute_activity_method(
                FormationActivities.extract_reflections, args=args, **self._llm
            )
        except ActivityError as err:
            if _splits(err):
                if window.message_count > 1 and part is None:
                    raise self._split(window, "extract_reflections", err) from err
                self._passed_over(summary, window, "extract_reflections", err, part)
                return ReflectionsResult(reflections=[])
            if not _degrades(err):
                raise
            self._degraded(summary, window, "extract_reflections", err, part)
            return ReflectionsResult(reflections=[])
