"""Errors of the domain core. Activities translate them into Temporal errors (retryable or not)."""

from __future__ import annotations


class MnemosError(Exception):
    """Base of every error mnemos raises on purpose."""

    retryable: bool = False


class NotFoundError(MnemosError):
    """An agent, session, fact or blob that the caller named does not exist."""


class InvalidInputError(MnemosError):
    """The caller's input is malformed; nothing was written."""


class ConflictError(MnemosError):
    """Someone else changed the thing first (a cursor moved, a blob version advanced)."""

    retryable = True


class StaleDecisionError(ConflictError):
    """A dedup decision was made against a fact version that has since changed: decide again."""


class EmbeddingMismatchError(MnemosError):
    """Vectors of a different model or dimension than the stored ones: mixing them would be silent garbage."""


class ProviderError(MnemosError):
    """An LLM or embedding provider failed. ``retryable`` and ``retry_after`` say what to do about it."""

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

    def __init__(self, message: str, *, provider: str = "") -> None:
        super().__init__(message, retryable=True, provider=provider)


class InvalidModelOutputError(MnemosError):
    """Well-formed output that fails our checks (an unknown fact index, a blob over its word limit)."""

    retryable = True
