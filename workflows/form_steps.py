"""FormMemories' LLM steps: a window's extraction, decision and reflections.

A message longer than the formation budget is read slice by slice (memory/pipeline/slices.py says
why here, in the workflow): one extraction activity per slice, its index an argument, the slices'
results merged before the dedup and the one commit. Runs recorded before SLICED_MESSAGES never
loaded a window of more than one slice, and replay as they ran.

The facts of a message's slices or pieces that a bound leaves out (pieces.over_bound), and those
a window's second looks find past its bound (ExtractedFactsResult.over_bound), are said and never
formed: the summary counts them (facts_over_bound, in the memo and what `mnemos form`
prints) and so does OVER_BOUND_METRIC, where an operator looks, not only a log line. Counted from
the activities' results, in fields and a workflow metric (not emitted on replay): no command
changes, no patch.

What a failing step does is in workflows/form_failures.py; the reading in pieces in
workflows/form_pieces.py.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

from workflows.form_failures import degrades, splits
from workflows.form_pieces import PieceReads, in_pieces

with workflow.unsafe.imports_passed_through():
    from activities.formation import FormationActivities
    from memory.pipeline import pieces
    from memory.pipeline.slices import merge_facts, merge_reflections
    from memory.pipeline.types import (
        CandidatesResult,
        DecisionsResult,
        ExtractedFactsResult,
        NewFact,
        ReflectionsResult,
        Window,
    )
    from memory.prompts.common import MAX_ITEMS
    from workflows.form_versions import SLICED_MESSAGES
    from workflows.naming import OVER_BOUND_METRIC
    from workflows.paid import paid_for
    from workflows.summary import FormationSummary


def _sliced(window: Window) -> bool:
    """Whether the window's steps read it slice by slice (a message longer than the budget)."""
    return window.slices > 1 and workflow.patched(SLICED_MESSAGES)


class FormationSteps(PieceReads):
    """The steps of one pass, as FormMemoriesWorkflow runs them (its options set by its run)."""

    async def _extract_all(self, window: Window, summary: FormationSummary) -> ExtractedFactsResult:
        """The window's facts: those of every slice of a message longer than the budget, merged;
        of a window of one message, its slices' halves where they were read in pieces."""
        sliced = _sliced(window)
        if sliced:
            summary.sliced_messages += 1
            summary.slices_read += window.slices
            workflow.logger.info(
                "a message longer than the budget is read in slices",
                extra={"slices": window.slices, "formation": window.formation_id},
            )
        if window.message_count != 1:  # never sliced: a long message is alone in its window
            answer = await self._extract(window, summary)
            # What the second looks found past the window's bound (memory/pipeline/facts.py).
            self._over_bound(summary, window, answer.over_bound, answer, "facts")
            return answer
        slices = window.slices if sliced else 1
        leaves: list[ExtractedFactsResult] = []
        for n in range(slices):
            leaves += await self._read_slice(window, summary, n if sliced else None)
        if len(leaves) == 1 and not sliced:
            return leaves[0]  # the window's one answer, as before
        merged = merge_facts(leaves)  # the slices' facts kept to the bound their answers say
        dense = len(leaves) > slices
        # The patch is asked only where the pieces' bound keeps more than older code kept (a
        # fact said in two slices is dropped by both, and asks nothing).
        wide = pieces.merged(leaves)
        if dense or (len(wide.facts) > len(merged.facts) and in_pieces()):
            merged = wide
        if dense:
            summary.read_in_pieces(len(leaves))
            workflow.logger.info(
                "a dense message is read in pieces",
                extra={
                    "pieces": len(leaves),
                    "slices": slices,
                    "dropped": merged.dropped,
                    "formation": window.formation_id,
                },
            )
        lost = pieces.over_bound(leaves, merged)
        self._over_bound(summary, window, lost, merged, pieces.bound_reached(merged))
        return merged

    def _over_bound(
        self,
        summary: FormationSummary,
        window: Window,
        lost: int,
        kept: ExtractedFactsResult,
        bound: str,
    ) -> None:
        """Facts said in the window and left out by its bound (``bound``: of "facts" or of
        "text"): counted where operators look (the cap is by design, the loss must not be
        silent)."""
        if not lost:
            return
        summary.facts_over_bound += lost
        workflow.logger.warning(
            "facts past the window's bound are not formed",
            extra={
                "facts": lost,
                "kept": len(kept.facts),
                "bound": bound,
                "formation": window.formation_id,
            },
        )
        workflow.metric_meter().create_counter(
            OVER_BOUND_METRIC, "Facts extracted and not formed, past a window's bound", "facts"
        ).add(lost, {"bound": bound})

    async def _extract(
        self, window: Window, summary: FormationSummary, part: int | None = None
    ) -> ExtractedFactsResult:
        """A window too large for one answer is split; a single message (or slice) passed over.
        Histories of older runs took the fallback: no facts from the whole window."""
        try:
            return await self._extract_command(window, part)
        except ActivityError as err:
            summary.llm_calls += paid_for(err)
            return self._extract_failed(window, summary, err, part)

    async def _decide(
        self,
        window: Window,
        new_facts: list[NewFact],
        candidates: CandidatesResult,
        summary: FormationSummary,
    ) -> DecisionsResult:
        """Fallback: every new fact added unmerged, flagged (no LLM). The model is asked in
        chunks of MAX_ITEMS facts (memory/pipeline/dedup.py), one after another inside the one
        activity: its timeout is the step's per chunk (more than one only for a dense message;
        replay does not compare timeouts), its heartbeat the step's."""
        chunks = max(1, ceil(len(new_facts) / MAX_ITEMS))
        llm = dict(self._llm)
        if chunks > 1:
            llm["start_to_close_timeout"] = self._llm["start_to_close_timeout"] * chunks
        try:
            return await workflow.execute_activity_method(
                FormationActivities.decide_fact_changes,
                args=[window, new_facts, candidates],
                **llm,
            )
        except ActivityError as err:
            summary.llm_calls += paid_for(err)
            if not degrades(err):
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
            summary.llm_calls += paid_for(err)
            if splits(err):
                if window.message_count > 1 and part is None:
                    raise self._split(window, "extract_reflections", err) from err
                self._passed_over(summary, window, "extract_reflections", err, part)
                return ReflectionsResult(reflections=[])
            if not degrades(err):
                raise
            self._degraded(summary, window, "extract_reflections", err, part)
            return ReflectionsResult(reflections=[])
