"""ConsolidateScope's small parts: how a buffer is halved, which failures are transient, and what a
run continuing as new carries to the next (ConsolidationRequest.carried): the summary so far, so
that the last run's result counts what every run did."""

from __future__ import annotations

from typing import Any

from temporalio.exceptions import ActivityError, ApplicationError, RetryState

from activities.errors import UNUSABLE_OUTPUT
from memory.pipeline.types import BufferedReflection
from workflows.drain import tallied
from workflows.summary import ConsolidationSummary

# The newest set-aside ids carried (a caller reads them to see which were corrected since: a few
# in any real buffer).
_SET_ASIDE_CARRIED = 1000


def carried(summary: ConsolidationSummary) -> dict[str, Any]:
    """What a run continuing as new carries to the next (ConsolidationRequest.carried): every
    count so far, its LLM calls tallied and its newest set-aside ids, bounded whatever the
    buffer, as Temporal refuses a payload over 2 MB."""
    bounded = summary.model_copy(
        update={
            "llm_calls": tallied(summary.llm_calls),
            "set_aside": summary.set_aside[-_SET_ASIDE_CARRIED:],
        }
    )
    return bounded.model_dump(mode="json")


def summary_so_far(carried: dict[str, Any] | None) -> ConsolidationSummary:
    """The earlier runs' summary, added to by this one: the last run's result counts them all.
    Read as the payload converter reads: a newer build's carry may hold fields this one lacks."""
    if carried is None:
        return ConsolidationSummary()
    return ConsolidationSummary.model_validate(carried, extra="ignore")


def halves(part: list[BufferedReflection]) -> list[list[BufferedReflection]]:
    mid = len(part) // 2
    return [part[:mid], part[mid:]]


def transient(err: ActivityError) -> bool:
    """The step gave up on an error a later attempt may not meet (its retries or time ran out), as
    opposed to one no retry changes (invalid input, a non-retryable provider answer)."""
    cause = err.cause
    if isinstance(cause, ApplicationError) and (
        cause.non_retryable or cause.type in UNUSABLE_OUTPUT
    ):
        return False
    return err.retry_state in (RetryState.MAXIMUM_ATTEMPTS_REACHED, RetryState.TIMEOUT)
