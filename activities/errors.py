"""Domain errors → Temporal errors: retryable or not, with the provider's Retry-After honoured."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from temporalio.exceptions import ApplicationError

from memory.errors import ConflictError, MnemosError, ProviderError, StaleDecisionError

# Error types a workflow reacts to by itself instead of letting the activity retry.
STALE_DECISION = "StaleDecision"
CONFLICT = "Conflict"


@contextmanager
def classified() -> Iterator[None]:
    """Raise every MnemosError as an ApplicationError whose type is the error's class name."""
    try:
        yield
    except ApplicationError:
        raise
    except StaleDecisionError as e:
        raise ApplicationError(str(e), type=STALE_DECISION, non_retryable=True) from e
    except ConflictError as e:
        raise ApplicationError(str(e), type=CONFLICT, non_retryable=True) from e
    except ProviderError as e:
        delay = timedelta(seconds=e.retry_after) if e.retryable and e.retry_after else None
        raise ApplicationError(
            str(e), type=type(e).__name__, non_retryable=not e.retryable, next_retry_delay=delay
        ) from e
    except MnemosError as e:
        raise ApplicationError(str(e), type=type(e).__name__, non_retryable=not e.retryable) from e
