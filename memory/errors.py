"""Errors of the domain core. Each class states once whether a retry of the same step can fix it
and under which type name Temporal shows it; activities/errors.py only translates."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from memory.llm_usage import Usage


class MnemosError(Exception):
    """Base of every error mnemos raises on purpose."""

    retryable: bool = False
    # The ApplicationError type name; None: the class name.
    error_type: ClassVar[str | None] = None

    @classmethod
    def type_name(cls) -> str:
        return cls.error_type or cls.__name__


class NotFoundError(MnemosError):
    """An agent, session, fact or blob that the caller named does not exist."""


class InvalidInputError(MnemosError):
    """The caller's input is malformed; nothing was written."""


class ConflictError(MnemosError):
    """Someone else changed the thing first (a cursor moved, a blob version advanced).

    Not retried as is: the same write would conflict again; the workflow reloads or redrafts."""

    error_type = "Conflict"


class StaleDecisionError(ConflictError):
    """A dedup decision was made against a fact version that has since changed: decide again."""

    error_type = "StaleDecision"


class EmbeddingMismatchError(MnemosError):
    """Vectors of a different model or dimension than the stored ones: mixing them would be silent garbage."""


class ProviderError(MnemosError):
    """An LLM or embedding provider failed. ``retryable`` (per instance: it depends on the status)
    and ``retry_after`` say what to do about it."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        provider: str = "",
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.provider = provider


class MalformedOutputError(ProviderError):
    """The model answered, but not with what the schema asks. Worth a retry; not worth storing."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        content: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, retryable=True, provider=provider)
        # What the model answered (for `mnemos check-model --record`); never in the message,
        # which reaches logs and histories.
        self.content = content
        # What the answer cost, when the provider said (an unusable answer costs its tokens
        # too): the worker's token metrics count it. None for an answer cut while it streamed.
        self.usage = usage


class InputRefusedError(ProviderError):
    """The provider refused this input (a content filter, a model's refusal): the same request
    is refused again, and another request may not be. The workflow splits the window down to
    the message it refuses and passes that one over, visibly; the others are formed."""

    error_type = "InputRefused"

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message, retryable=False, provider=provider)


class InvalidModelOutputError(MnemosError):
    """Well-formed output that fails our checks (an unknown fact index, a blob over its word limit)."""

    retryable = True


class WindowTooLargeError(MnemosError):
    """A step's answer cannot carry the window: it overflowed the step's bound, or filled it (a
    sign it was cut). Retrying the same window cannot help; the workflow splits it."""

    error_type = "WindowTooLarge"


class UnusableOutputError(MnemosError):
    """A model's output failed its checks in a way no retry can change: the same way twice, or from
    a deterministic provider (which answers a retry exactly as before). The workflow splits the
    window (or takes the step's fallback) at once instead of retrying with backoff."""

    error_type = "UnusableOutput"


class StoreUnavailableError(MnemosError):
    """The memory store cannot be reached (a server down, restarting or failing over, every
    pooled connection busy, a database file that cannot be opened or read): the same call may
    succeed later. Its message names no driver's text (addresses, paths): that is the cause's, for
    the logs. Each backend says which of its driver's errors mean it (memory/store/outage.py)."""

    retryable = True
    error_type = "StoreUnavailable"

    def __init__(self, message: str = "the memory store cannot be reached; retry later") -> None:
        super().__init__(message)
