"""Retryability is stated by each error class once; the activity layer only translates it."""

from __future__ import annotations

import pytest
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities.errors import (
    CONFLICT,
    STALE_DECISION,
    classified,
    halvable,
    non_retryable_types,
    not_halvable,
    with_halving,
)
from activities.paid import with_usage
from memory.errors import (
    ConflictError,
    InvalidModelOutputError,
    MalformedOutputError,
    MnemosError,
    NotFoundError,
    ProviderError,
    StaleDecisionError,
    StoreUnavailableError,
    UnusableOutputError,
    WindowTooLargeError,
)
from workflows.options import PERMANENT


def translated(err: MnemosError) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught, classified():
        raise err
    return caught.value


@pytest.mark.parametrize(
    ("err", "type_name", "retryable"),
    [
        (ConflictError("cursor moved"), CONFLICT, False),
        (StaleDecisionError("fact changed"), STALE_DECISION, False),
        (NotFoundError("no agent"), "NotFoundError", False),
        (InvalidModelOutputError("bad index"), "InvalidModelOutputError", True),
        (MalformedOutputError("not json"), "MalformedOutputError", True),
        (ProviderError("quota", retryable=True, status=429), "ProviderError", True),
        (ProviderError("bad key", retryable=False, status=401), "ProviderError", False),
        (StoreUnavailableError(), "StoreUnavailable", True),  # a store down: Temporal retries
    ],
)
def test_an_error_becomes_an_application_error_of_its_class(
    err: MnemosError, type_name: str, retryable: bool
) -> None:
    app = translated(err)
    assert (app.type, app.non_retryable) == (type_name, not retryable)
    assert type_name == err.type_name()


def test_failures_the_workflow_handles_are_benign_and_the_others_are_not() -> None:
    """Benign: the SDK logs them at DEBUG, not as a WARNING with a traceback each."""
    benign = [
        StaleDecisionError("fact changed"),
        UnusableOutputError("rejected the same way twice"),
        WindowTooLargeError("the answer filled its bound"),
    ]
    for err in benign:
        assert translated(err).category is ApplicationErrorCategory.BENIGN, err
    faults = [
        ProviderError("bad key", retryable=False, status=401),
        InvalidModelOutputError("bad index"),  # a model misbehaving: worth a warning
        StoreUnavailableError(),
        ConflictError("cursor moved"),
    ]
    for err in faults:
        assert translated(err).category is ApplicationErrorCategory.UNSPECIFIED, err
    halving = with_halving(translated(UnusableOutputError("no")), halvable=True)
    assert halving.category is ApplicationErrorCategory.BENIGN and halvable(halving)
    # As a model step that paid for calls sends it on (paid.paying): still benign.
    assert with_usage(halving, []).category is ApplicationErrorCategory.BENIGN
    assert not_halvable("p0").category is ApplicationErrorCategory.BENIGN


def test_a_provider_retry_after_becomes_the_next_retry_delay() -> None:
    app = translated(ProviderError("slow down", retryable=True, status=429, retry_after=7))
    assert app.next_retry_delay is not None and app.next_retry_delay.total_seconds() == 7


def test_the_workflows_non_retryable_list_is_derived_from_the_classes() -> None:
    assert tuple(non_retryable_types()) == PERMANENT
    assert set(PERMANENT) == {
        CONFLICT,
        STALE_DECISION,
        "NotFoundError",
        "InvalidInputError",
        "EmbeddingMismatchError",
        "UnusableOutput",
        "WindowTooLarge",
    }


@pytest.mark.parametrize(
    "err", [MalformedOutputError("not json"), InvalidModelOutputError("index 3 not offered")]
)
def test_unusable_output_is_retried_at_once_not_after_a_backoff(err: MnemosError) -> None:
    """The retry samples hotter and says why (memory.llm.base.Retry): waiting cannot help it."""
    app = translated(err)
    assert app.next_retry_delay is not None and app.next_retry_delay.total_seconds() <= 0.1
