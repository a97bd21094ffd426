"""A message read in pieces by FormMemories: a slice, and from DENSE_MESSAGES on its halves.

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
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.form_failures import StepFailures, degrades, error_type, splits

with workflow.unsafe.imports_passed_through():
    from activities.errors import NOT_HALVABLE, SPLITS_WINDOW, halvable
    from activities.formation import FormationActivities
    from memory.pipeline import pieces
    from memory.pipeline.types import ExtractedFactsResult, Window
    from workflows.form_versions import DENSE_MESSAGES
    from workflows.paid import paid_for
    from workflows.summary import FormationSummary


# The most halvings of a slice the workflow asks for, whatever an activity says: a guard of its
# own, fixed here (recorded histories halved within it), at least pieces.MAX_DEPTH.
_DEPTH = 6


def in_pieces() -> bool:
    """Whether a window of one message is read in pieces, where that reads it otherwise: asked
    only there, so the history of a window read as before holds no marker either."""
    return workflow.patched(DENSE_MESSAGES)


class PieceReads(StepFailures):
    """The extraction of a window's slice or piece, and of its halves."""

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
                splits(err)
                and isinstance(cause, ApplicationError)
                and halvable(cause)
                and in_pieces()
            ):
                self._halving(window, part or 0, (), str(cause))
                return await self._halves(window, summary, part or 0, (), err)
            return [self._extract_failed(window, summary, err, part)]
        if pieces.full(len(first.facts) + first.dropped, len(first.facts)) and in_pieces():
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
        if splits(err):
            if window.message_count > 1 and part is None:
                raise self._split(window, "extract_facts", err) from err
            self._passed_over(summary, window, "extract_facts", err, part)
            return ExtractedFactsResult(facts=[])
        if not degrades(err):
            raise err
        self._degraded(summary, window, "extract_facts", err, part)
        return ExtractedFactsResult(facts=[])
