"""What a pass of FormMemories does when one of its LLM steps fails: a window too large for a
step is split, a single message (or one slice of a message longer than the budget) that no retry
can extract is passed over, visibly, and a step whose output stayed unusable takes its fallback.

A step that fails paid for its attempts' answers all the same: its error carries them
(workflows/paid.py), added to the summary wherever the error is caught. No command changes, and
a replay does not compare the memo they change: no patch.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from activities.errors import SPLITS_WINDOW, UNUSABLE_OUTPUT
    from memory.pipeline import pieces
    from memory.pipeline.types import Window
    from workflows.form_versions import DEGRADED_FALLBACKS, SPLIT_WINDOWS
    from workflows.naming import DEGRADED_METRIC
    from workflows.summary import FormationSummary


def error_type(err: ActivityError) -> str | None:
    cause = err.cause
    return cause.type if isinstance(cause, ApplicationError) else None


class Split(Exception):
    """This window cannot be formed as one: load it again with fewer messages."""


def splits(err: ActivityError) -> bool:
    """The extraction cannot carry its window, and no retry of the same window can change that."""
    return error_type(err) in SPLITS_WINDOW and workflow.patched(SPLIT_WINDOWS)


def degrades(err: ActivityError) -> bool:
    """The model's output stayed unusable through the step's retries: take the step's fallback
    (recorded histories of older runs failed here, and replay so)."""
    return error_type(err) in UNUSABLE_OUTPUT and workflow.patched(DEGRADED_FALLBACKS)


class StepFailures:
    """Where a failed step is recorded (FormMemoriesWorkflow's options set by its run)."""

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
