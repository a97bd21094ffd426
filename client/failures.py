"""A run that failed for its LLM or embedding provider, said as a ProviderError naming the run and
what the provider answered (HTTP: a 502 problem), not as temporalio's WorkflowFailureError; and a
forget whose runs Temporal could not delete (RunsLeftError, HTTP: a 503 problem)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from memory.errors import MnemosError, NotFoundError, ProviderError
from runtime.erasure import session_workflow_ids


def _kinds(cls: type[ProviderError]) -> set[str]:
    return {cls.type_name()}.union(*(_kinds(sub) for sub in cls.__subclasses__()))


# The type names a provider's failure reaches a workflow's failure under (activities/errors.py
# raises each MnemosError as an ApplicationError of its class's type name).
_PROVIDER_FAILURES = frozenset(_kinds(ProviderError))


def provider_failure(
    workflow_id: str, err: WorkflowFailureError, kept: str
) -> ProviderError | None:
    """The ProviderError a run failed for, saying which run, what the provider answered (its
    message names the provider: "openai HTTP 401: …") and what is ``kept`` for the next run;
    None for a run that failed otherwise."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type in _PROVIDER_FAILURES:
            return ProviderError(
                f"{workflow_id} failed for its LLM or embedding provider: {cause.message} "
                f"({kept}: ask again once the provider answers)",
                retryable=not cause.non_retryable,
            )
        cause = cause.__cause__
    return None


UNFORMED = "the messages stay stored, unformed"
UNCONSOLIDATED = "the session's reflections stay buffered"


async def failed_for_provider(
    temporal: Client, workflow_id: str, since: datetime, kept: str
) -> ProviderError | None:
    """The ProviderError the latest run of ``workflow_id`` failed for, if it failed for its
    provider and closed at or after ``since`` (an older failed run is not this end's)."""
    try:
        described = await temporal.get_workflow_handle(workflow_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:  # never started
            return None
        raise
    closed = described.close_time
    if described.status != WorkflowExecutionStatus.FAILED or closed is None or closed < since:
        return None
    # That run and no other: a new run of the id (the next trigger) would be waited for.
    run = temporal.get_workflow_handle(workflow_id, run_id=described.run_id)
    try:
        await run.result(follow_runs=False)
    except WorkflowFailureError as err:
        return provider_failure(workflow_id, err, kept)
    return None


def erased_meanwhile(err: WorkflowFailureError, what: str) -> NotFoundError | None:
    """A NotFoundError saying ``what`` is gone when the run failed for it not being found: the
    session's only user was forgotten between the end's start and its first step (the forget
    took the session whole). None for a run that failed otherwise."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, ApplicationError) and cause.type == NotFoundError.type_name():
            return NotFoundError(f"{what} is gone: erased (a forget) before its end ran")
        cause = cause.__cause__
    return None


class RunsLeftError(MnemosError):
    """A forget whose store erasure is done, but whose workflow runs Temporal could not delete:
    a retry deletes the user's own runs (found by their search attribute); the runs of the
    sessions it deleted are named here, since no later forget can find them (the sessions are
    gone from the store). HTTP: a 503 problem with this message."""

    retryable = True
    error_type = "RunsLeft"


def runs_left(err: RPCError, session_scopes: Sequence[str]) -> RunsLeftError:
    sessions = session_workflow_ids(session_scopes)
    named = (
        f"; and these runs of the sessions it deleted: {', '.join(sessions)}" if sessions else ""
    )
    return RunsLeftError(
        "the user's memory is erased from the store, but their closed workflow runs are not "
        f"deleted (Temporal: {err.status.name if err.status else 'error'}): forget again once "
        "Temporal answers to delete "
        f"their own runs{named}"
    )
