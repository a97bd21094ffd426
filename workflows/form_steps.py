"""FormMemories' LLM steps and what it does when one fails: a window too large for a step is split,
a single message (or one slice of a message longer than the budget) that no retry can extract is
passed over, visibly, and a step whose output stayed unusable takes its fallback.

A message longer than the formation budget is read slice by slice (memory/pipeline/slices.py says
why here, in the workflow): one extraction activity per slice, its index an argument, the slices'
results merged before the dedup and the one commit. Runs recorded before SLICED_MESSAGES never
loaded a window of more than one slice, and replay as they ran.

From DENSE_MESSAGES on, a slice of a window of one message (the whole message for one within the
budget) whose answer is full or whose extraction fails in a way a split can change is read again
in halves (memory/pipeline/pieces.py says when, and why that ends). Its first read is the
extract_facts activity as before, the same command with the same arguments: an ordinary window's
history is what it was, and a worker of the previous build still takes it. Only the halves are
extract_piece_facts activities, each with the step's timeout, heartbeats and retries (the
activities say whether a piece can be halved: the workflow never holds the text). A piece that
cannot be halved keeps its full answer, or is passed over visibly when it fails. At most
pieces.MAX_DENSE_FACTS distinct facts of the pieces go through the window's one decision, whose
timeout is scaled by the model calls it makes (dedup asks in chunks of MAX_ITEMS), and its one
commit. Runs recorded before it replay as they ran: the patch is asked only where a window is
read otherwise (a halving, or more facts kept than older code kept).

The facts of a message's slices or pieces that a bound leaves out (pieces.over_bound), and those
a window's second looks find past its bound (ExtractedFactsResult.over_bound), are said and never
formed: the summary counts them (facts_over_bound, in the memo and what `mnemos form`
prints) and so does OVER_BOUND_METRIC, where an operator looks, not only a log line. Counted from
the activities' results, in fields and a workflow metric (not emitted on replay): no command
changes, no patch.

A step that fails paid for its attempts' answers all the same: its error carries them
(workflows/paid.py), added to the summary wherever the error is caught. No command changes, and
a replay does not compare the memo they change: no patch.
"""

from __future__ import annotations

from math import ceil
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.errors import NOT_HALVABLE, SPLITS_WINDOW, UNUSABLE_OUTPUT, halvable
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
    from workflows.form_versions import (
        DEGRADED_FALLBACKS,
        DENSE_MESSAGES,
        SLICED_MESSAGES,
        SPLIT_WINDOWS,
    )
    from workflows.naming import DEGRADED_METRIC, OVER_BOUND_METRIC
    from workflows.paid import paid_for
    from workflows.summary import FormationSummary


def error_type(err: ActivityError) -> str | None:
    cause = err.cause
    return cause.type if isinstance(cause, ApplicationError) else None


# The most halvings of a slice the workflow asks for, whatever an activity says: a guard of its
# own, fixed here (recorded histories halved within it), at least pieces.MAX_DEPTH.
_DEPTH = 6


class Split(Exception):
    """This window cannot be formed as one: load it again with fewer messages."""


def _splits(err: ActivityError) -> bool:
    """The extraction cannot carry its window, and no retry of the same window can change that."""
    return error_type(err) in SPLITS_WINDOW and workflow.patched(SPLIT_WINDOWS)


def _degrades(err: ActivityError) -> bool:
    """The model's output stayed unusable through the step's retries: take the step's fallback
    (recorded histories of older runs failed here, and replay so)."""
    return error_type(err) in UNUSABLE_OUTPUT and workflow.patched(DEGRADED_FALLBACKS)


def _dense() -> bool:
    """Whether a window of one message is read in pieces, where that reads it otherwise: asked
    only there, so the history of a window read as before holds no marker either."""
    return workflow.patched(DENSE_MESSAGES)


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
        halves: pieces.Halves = (),
    ) -> None:
        reason = str(err.cause) if isinstance(err, ActivityError) and err.cause else str(err)
        if part is not None and (window.slices > 1 or halves):
            reason = f"{pieces.name(part, window.slices, halves)}: {reason}"
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
        halves: pieces.Halves = (),
    ) -> None:
        """One message (or one slice of it, or a piece too short to halve) that no retry could
        extract: formed without this step's memories, recorded where operators look (summary,
        memo, metric, outcome; `mnemos degraded`, whose re-form reads the whole message again)."""
        self._degraded(summary, window, step, err, part, halves)
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
        if dense or (len(wide.facts) > len(merged.facts) and _dense()):
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

    async def _read_slice(
        self, window: Window, summary: FormationSummary, part: int | None
    ) -> list[ExtractedFactsResult]:
        """A slice of the window's one message (``part`` None: the whole message, within the
        budget), read by extract_facts as before; from DENSE_MESSAGES on, in halves instead when
        its answer is full or its extraction failed and the activity says it can be halved."""
        try:
            first = await self._extract_command(window, part)
        except ActivityError as err:
            summary.llm_calls += paid_for(err)
            cause = err.cause
            # The patch asked last: only where the slice is halved (its marker then recorded).
            if (
                _splits(err)
                and isinstance(cause, ApplicationError)
                and halvable(cause)
                and _dense()
            ):
                self._halving(window, part or 0, (), str(cause))
                return await self._halves(window, summary, part or 0, (), err)
            return [self._extract_failed(window, summary, err, part)]
        if pieces.full(len(first.facts) + first.dropped, len(first.facts)) and _dense():
            self._halving(window, part or 0, (), f"a full answer: {len(first.facts)} facts kept")
            return await self._halves(window, summary, part or 0, (), first)
        return [first]

    async def _halves(
        self,
        window: Window,
        summary: FormationSummary,
        part: int,
        halves: pieces.Halves,
        whole: ExtractedFactsResult | ActivityError,
    ) -> list[ExtractedFactsResult]:
        """The two halves of a piece, read in message order; when it is not halved after all
        (the activity says so: too short, as deep as halving goes), the piece's ``whole``
        answer, or the piece passed over when it failed."""
        first = await self._read_piece(window, summary, part, (*halves, 0))
        if first is None:
            if isinstance(whole, ExtractedFactsResult):
                return [whole]
            self._passed_over(summary, window, "extract_facts", whole, part, halves)
            return [ExtractedFactsResult(facts=[])]
        if isinstance(whole, ExtractedFactsResult):
            summary.llm_calls += whole.llm  # set aside for its halves' answers, but paid for
        return first + (await self._read_piece(window, summary, part, (*halves, 1)) or [])

    async def _read_piece(
        self,
        window: Window,
        summary: FormationSummary,
        part: int,
        halves: pieces.Halves,
    ) -> list[ExtractedFactsResult] | None:
        """A half's facts, or its own halves' when its answer is full or its extraction failed
        and the activity says it can be halved (at most _DEPTH times, here too: every path
        ends); a half that cannot be halved keeps its full answer, or is passed over when it
        stays unusable. None: the piece it halves is not halved."""
        try:
            answer: ExtractedFactsResult = await workflow.execute_activity_method(
                FormationActivities.extract_piece_facts,
                args=[window, part, list(halves)],
                **self._llm,
            )
        except ActivityError as err:
            summary.llm_calls += paid_for(err)
            kind = error_type(err)
            if kind == NOT_HALVABLE:
                return None
            if kind not in SPLITS_WINDOW:
                raise
            cause = err.cause
            if isinstance(cause, ApplicationError) and halvable(cause) and len(halves) < _DEPTH:
                self._halving(window, part, halves, str(cause))
                return await self._halves(window, summary, part, halves, err)
            self._passed_over(summary, window, "extract_facts", err, part, halves)
            return [ExtractedFactsResult(facts=[])]
        kept = len(answer.facts)
        if pieces.full(kept + answer.dropped, kept) and len(halves) < _DEPTH:
            self._halving(window, part, halves, f"a full answer: {kept} facts kept")
            return await self._halves(window, summary, part, halves, answer)
        return [answer]

    def _halving(self, window: Window, part: int, halves: pieces.Halves, reason: str) -> None:
        workflow.logger.info(
            "a piece of a message is read again in halves",
            extra={
                "piece": pieces.name(part, window.slices, halves),
                "reason": reason[:300],
                "formation": window.formation_id,
            },
        )

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

    async def _extract_command(self, window: Window, part: int | None) -> ExtractedFactsResult:
        if part is None:
            return await workflow.execute_activity_method(
                FormationActivities.extract_facts, window, **self._llm
            )
        return await workflow.execute_activity_method(
            FormationActivities.extract_facts, args=[window, part], **self._llm
        )

    def _extract_failed(
        self, window: Window, summary: FormationSummary, err: ActivityError, part: int | None
    ) -> ExtractedFactsResult:
        if _splits(err):
            if window.message_count > 1 and part is None:
                raise self._split(window, "extract_facts", err) from err
            self._passed_over(summary, window, "extract_facts", err, part)
            return ExtractedFactsResult(facts=[])
        if not _degrades(err):
            raise err
        self._degraded(summary, window, "extract_facts", err, part)
        return ExtractedFactsResult(facts=[])

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
            summary.llm_calls += paid_for(err)
            if _splits(err):
                if window.message_count > 1 and part is None:
                    raise self._split(window, "extract_reflections", err) from err
                self._passed_over(summary, window, "extract_reflections", err, part)
                return ReflectionsResult(reflections=[])
            if not _degrades(err):
                raise
            self._degraded(summary, window, "extract_reflections", err, part)
            return ReflectionsResult(reflections=[])
