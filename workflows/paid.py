"""What a failed LLM step paid for, read from its error: the calls its attempts made, which a run
adds to its summary where it goes on without the step's result (a split, a halving, a message
passed over, a fallback, a wait). activities/paid.py writes them, where memory/pipeline/usage.py
says; an error of an older worker carries none, and nothing is added."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from memory.pipeline.types import LlmCall
    from memory.pipeline.usage import ERROR_USAGE, HEARTBEAT_USAGE, carried


def paid_for(err: ActivityError) -> list[LlmCall]:
    cause = err.cause
    if isinstance(cause, ApplicationError):
        return carried(cause.details, ERROR_USAGE)
    if isinstance(cause, TimeoutError):  # the last attempt timed out: what earlier ones sent on
        return carried(cause.last_heartbeat_details, HEARTBEAT_USAGE)
    return []
