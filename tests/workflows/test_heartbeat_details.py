"""What an LLM step's attempts tell the next one through heartbeat details (activities/heartbeat.py):
how many answers were rejected and why the last was. A retry after a rejection differs from the
failed request; a retry after a provider failure is the same request."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from activities.heartbeat import heartbeating, noting_rejection, this_attempt
from memory.errors import InvalidModelOutputError
from memory.llm.base import Retry


def _env(attempt: int, details: Sequence[Any]) -> ActivityEnvironment:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        attempt=attempt,
        heartbeat_details=details,
        heartbeat_timeout=timedelta(milliseconds=300),
    )
    return env


async def test_an_attempt_that_fails_otherwise_sends_on_what_the_last_rejection_recorded() -> None:
    """Attempt 3 timed out after beating; attempt 4 must still know of attempt 2's rejection."""
    env = _env(3, ["existing index 3 was not offered", 1])
    beats: list[tuple[Any, ...]] = []
    beaten = asyncio.Event()

    def on_heartbeat(*details: Any) -> None:
        beats.append(details)
        beaten.set()

    env.on_heartbeat = on_heartbeat
    await env.run(heartbeating, beaten.wait())  # returns once a beat was sent
    assert beats and set(beats) == {("existing index 3 was not offered", 1)}


async def test_a_rejection_counts_on_from_what_earlier_attempts_recorded() -> None:
    env = _env(4, ["existing index 3 was not offered", 1])
    beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *details: beats.append(details)

    def rejected() -> None:
        with noting_rejection():
            raise InvalidModelOutputError("existing index 5 was not offered")

    with pytest.raises(InvalidModelOutputError):
        env.run(rejected)
    assert beats == [("existing index 5 was not offered", 2)]


@pytest.mark.parametrize(
    ("attempt", "details", "expected"),
    [
        (1, [], Retry(attempt=1, rejected=None, rejections=0)),
        # The previous attempts failed at the provider: nothing was rejected.
        (3, [], Retry(attempt=3, rejected=None, rejections=0)),
        (3, ["not JSON", 1], Retry(attempt=3, rejected="not JSON", rejections=1)),
        # Recorded by an older worker, which did not count: every earlier attempt counts.
        (3, ["not JSON"], Retry(attempt=3, rejected="not JSON", rejections=None)),
    ],
)
def test_the_attempt_reads_what_was_recorded(
    attempt: int, details: list[Any], expected: Retry
) -> None:
    assert _env(attempt, details).run(this_attempt) == expected


def test_a_retry_samples_hotter_per_rejected_answer_not_per_attempt() -> None:
    after_timeouts = Retry(attempt=3, rejections=0)
    assert (after_timeouts.temperature(0.0), after_timeouts.prompt("p")) == (0.0, "p")
    after_one = Retry(attempt=3, rejected="not JSON", rejections=1)
    assert after_one.temperature(0.0) == 0.3
    assert after_one.prompt("p").startswith(
        "p\n\nAn earlier answer was rejected (the last: not JSON)"
    )
    older_worker = Retry(attempt=3, rejected="not JSON")
    assert older_worker.temperature(0.0) == 0.6
