"""Activity timeouts and retry policies, built from the RetrySettings a run was started with.

LLM steps retry with backoff (a 429's Retry-After overrides the interval) and give up after a few
attempts: a run that fails leaves the cursor where it was, so the range is formed by a later run.
LLM steps heartbeat, so a dead worker is noticed in seconds, not after the whole call timeout.
Store steps retry longer: they are cheap and their failures are usually transient; they heartbeat
too (every activity does, by the worker's interceptor), on a timeout of a few seconds.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

from activities.errors import non_retryable_types
from memory.settings import RetrySettings

# Failures that no retry of the same activity can fix: the workflow reacts, or the run fails.
# Derived from the error classes, which state their retryability once.
PERMANENT = tuple(non_retryable_types())


def llm(r: RetrySettings, task_queue: str | None = None) -> dict[str, Any]:
    """Options of an LLM step; ``task_queue`` routes it to the rate-limited LLM workers."""
    routed = {"task_queue": task_queue} if task_queue else {}
    return {
        **routed,
        "start_to_close_timeout": timedelta(seconds=r.llm_timeout_seconds),
        "heartbeat_timeout": timedelta(seconds=r.llm_heartbeat_seconds),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(seconds=r.llm_initial_interval_seconds),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=r.llm_max_interval_seconds),
            maximum_attempts=r.llm_max_attempts,
            non_retryable_error_types=PERMANENT,
        ),
    }


def store(r: RetrySettings) -> dict[str, Any]:
    return {
        "start_to_close_timeout": timedelta(seconds=r.store_timeout_seconds),
        # Every activity heartbeats (activities.heartbeat.HeartbeatInterceptor): a killed worker
        # is noticed in seconds.
        "heartbeat_timeout": timedelta(seconds=r.store_heartbeat_seconds),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(seconds=r.store_initial_interval_seconds),
            backoff_coefficient=2.0,
            maximum_interval=timedelta(seconds=r.store_max_interval_seconds),
            maximum_attempts=r.store_max_attempts,
            non_retryable_error_types=PERMANENT,
        ),
    }


def local_store(r: RetrySettings) -> dict[str, Any]:
    """A short store read run as a local activity: the store step's timeout and retries, no
    heartbeat (it runs inside the workflow task: a dead worker fails the task, and the next worker
    runs the read again)."""
    return {k: v for k, v in store(r).items() if k != "heartbeat_timeout"}
