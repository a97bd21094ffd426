"""The one shape of a workflow's waits before trying again: exponential, capped, jittered."""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow


def jittered(first_seconds: float, max_seconds: float, n: int) -> timedelta:
    """The n-th wait (from 1): ``first_seconds`` doubling to ``max_seconds``, times a factor in
    [0.5, 1.5) from the workflow's deterministic random, so that many runs failing together do
    not all come back at once (one random draw per wait: histories replay)."""
    ceiling = min(max_seconds, first_seconds * 2 ** (n - 1))
    return timedelta(seconds=ceiling * (0.5 + workflow.random().random()))
