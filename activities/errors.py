"""Domain errors → Temporal errors. Whether an error is retryable, and its type name, is stated by
its class in memory/errors.py; this module only translates (and honours a provider's Retry-After)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from memory import errors
from memory.errors import (
    ConflictError,
    InputRefusedError,
    InvalidModelOutputError,
    MalformedOutputError,
    MnemosError,
    ProviderError,
    StaleDecisionError,
    UnusableOutputError,
    WindowTooLargeError,
)
from memory.llm.errors import ContextExceededError

# Error types a workflow reacts to by itself instead of letting the activity retry.
STALE_DECISION = StaleDecisionError.type_name()
CONFLICT = ConflictError.type_name()
# A model's answer that will not get better by retrying the same request after a backoff: the
# next attempt follows at once (it says why the last one was rejected, and samples hotter).
_AT_ONCE = timedelta(milliseconds=100)


def non_retryable_types() -> list[str]:
    """Type names of the domain's error classes that are never retryable (a provider error decides
    per instance, so it is left to the flag each ApplicationError carries)."""
    domain = [
        c
        for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, MnemosError) and c is not MnemosError
    ]
    return sorted(
        {c.type_name() for c in domain if not c.retryable and not issubclass(c, ProviderError)}
    )


# Failures the workflow handles by design (a stale decision decided again, a window split, a
# step's fallback taken): BENIGN, which the SDK logs at DEBUG instead of as a WARNING with its
# traceback. One long message read in halves by the offline provider printed 126 of those (r249),
# each looking like a fault. A run's summary, its search attributes and mnemos' own metrics
# (runtime/metrics.py record_failure) still count every one.
_HANDLED = (StaleDecisionError, UnusableOutputError, WindowTooLargeError)


def category(err: MnemosError) -> ApplicationErrorCategory:
    if isinstance(err, _HANDLED):
        return ApplicationErrorCategory.BENIGN
    return ApplicationErrorCategory.UNSPECIFIED


@contextmanager
def classified() -> Iterator[None]:
    """Raise every MnemosError as an ApplicationError of its class's type name and retryability."""
    try:
        yield
    except ApplicationError:
        raise
    except MnemosError as e:
        delay = None
        if isinstance(e, ProviderError) and e.retryable and e.retry_after:
            delay = timedelta(seconds=e.retry_after)
        elif isinstance(e, InvalidModelOutputError | MalformedOutputError):
            delay = _AT_ONCE
        raise ApplicationError(
            str(e), type=e.type_name(), non_retryable=not e.retryable, next_retry_delay=delay,
            category=category(e),
        ) from e  # fmt: skip


# A model's output that stayed unusable through the step's retries (or that no retry can change):
# the workflow splits the window, or takes the step's documented fallback, instead of failing the
# run (README "When the model misbehaves", docs/backlog.md).
UNUSABLE_OUTPUT = frozenset(
    {
        InputRefusedError.type_name(),  # an input the provider refuses: no retry changes it
        # A request the server refuses as longer than its model's context: a type of its own, not
        # WINDOW_TOO_LARGE, so that the decision (nothing to split) takes its fallback too, and no
        # recorded history meets it (they hold a ProviderError there, and replay so).
        ContextExceededError.type_name(),
        InvalidModelOutputError.type_name(),
        MalformedOutputError.type_name(),
        UnusableOutputError.type_name(),
    }
)
INPUT_REFUSED = InputRefusedError.type_name()
# A step whose answer cannot carry its input (a window, a consolidation's buffer): split it.
WINDOW_TOO_LARGE = WindowTooLargeError.type_name()
# An extraction that cannot carry its window: split it (down to one message).
SPLITS_WINDOW = UNUSABLE_OUTPUT | {WINDOW_TOO_LARGE}


# A half asked of a piece that is not halved (too short, as deep as halving goes, or its message
# no longer the agent's): the workflow keeps the piece's own answer, or passes it over when it
# failed. A type of its own, never retried: no domain error has it, so no older code reacts to it.
NOT_HALVABLE = "PieceNotHalvable"


def not_halvable(piece: str) -> ApplicationError:
    return ApplicationError(
        f"{piece} is not read in halves (memory/pipeline/pieces.py)",
        type=NOT_HALVABLE,
        non_retryable=True,
        category=ApplicationErrorCategory.BENIGN,  # the workflow keeps or passes over the piece
    )


def with_halving(err: ApplicationError, halvable: bool) -> ApplicationError:
    """``err`` saying, as its one detail, whether the piece of a message whose extraction it ends
    can be read again in halves (memory/pipeline/pieces.py): the workflow, which never holds the
    text, asks it of the activity that read it. Older workflow code reads no detail of an
    extraction's error; an older worker's error says nothing, and its piece is not halved."""
    return ApplicationError(
        err.message,
        halvable,
        type=err.type,
        non_retryable=err.non_retryable,
        next_retry_delay=err.next_retry_delay,
        category=err.category,
    )


def halvable(err: ApplicationError) -> bool:
    """What ``with_halving`` said (False for an error that does not say)."""
    return bool(err.details) and err.details[0] is True
