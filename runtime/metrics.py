"""Prometheus metrics: Temporal's SDK metrics and mnemos' own, served by one endpoint per process.

The endpoint belongs to a Temporal ``Runtime`` (``worker_runtime``): the SDK exports its worker,
workflow and activity metrics there, and every metric below is created on that runtime's meter, so
one scrape of ``http://<settings.temporal.metrics_bind>/metrics`` returns both.

Worker side, ``MetricsInterceptor`` counts the LLM answers each activity attempt received
(``memory.tracing.answers_returned``: those the step then rejected too) and reads what the
activities return (embedding calls, commit and consolidation outcomes): no activity code knows
about metrics, and a retried activity counts each attempt. Client side, ``client.metrics``
counts context-cache hits and misses and times ``search_facts`` on the same names. On a runtime
without Prometheus the meter is a no-op, so recording costs nothing where nobody scrapes.

Names (counters have no ``_total`` suffix, durations are milliseconds, as Temporal's own):
``mnemos_formations{outcome}``, ``mnemos_llm_calls{model,provider,task}``,
``mnemos_llm_tokens{model,kind}``, ``mnemos_embedding_calls``, ``mnemos_consolidations{scope,outcome}``,
``mnemos_context_cache_requests{result}``, ``mnemos_search_latency`` (histogram),
``mnemos_formations_deferred{reason}`` (client), ``mnemos_cold_sessions_found``,
``mnemos_cold_formations{outcome}``, ``mnemos_consolidation_lag`` (histogram: how long the oldest
reflection a consolidation absorbed had waited in its buffer) and, from the workflows,
``mnemos_formation_degraded{step}``. deploy/grafana's dashboard charts them
(tests/test_dashboard.py keeps the two in step).
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import temporalio.client
import temporalio.worker
from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.runtime import PrometheusConfig, Runtime, TelemetryConfig

from memory import tracing
from memory.errors import ConflictError, MnemosError, StaleDecisionError
from memory.pipeline.types import (
    CandidatesResult,
    CommitResult,
    ConsolidationDraft,
    ConsolidationResult,
    DecisionsResult,
)
from memory.settings import Settings
from workflows.naming import DEGRADED_METRIC, OVER_BOUND_METRIC

FORMATIONS = "mnemos_formations"
LLM_CALLS = "mnemos_llm_calls"
LLM_TOKENS = "mnemos_llm_tokens"
EMBEDDING_CALLS = "mnemos_embedding_calls"
CONSOLIDATIONS = "mnemos_consolidations"
CONTEXT_CACHE = "mnemos_context_cache_requests"
SEARCH_LATENCY = "mnemos_search_latency"
FORMATIONS_DEFERRED = "mnemos_formations_deferred"
COLD_SESSIONS_FOUND = "mnemos_cold_sessions_found"
COLD_FORMATIONS = "mnemos_cold_formations"
CONSOLIDATION_LAG = "mnemos_consolidation_lag"
ALL_METRICS = (
    FORMATIONS,
    LLM_CALLS,
    LLM_TOKENS,
    EMBEDDING_CALLS,
    CONSOLIDATIONS,
    CONTEXT_CACHE,
    SEARCH_LATENCY,
    FORMATIONS_DEFERRED,
    COLD_SESSIONS_FOUND,
    COLD_FORMATIONS,
    CONSOLIDATION_LAG,
    DEGRADED_METRIC,
    OVER_BOUND_METRIC,
)
HISTOGRAMS = (SEARCH_LATENCY, CONSOLIDATION_LAG)

# Searches take milliseconds (SQLite, numpy) to a few hundred (Atlas + a remote embedder): the
# SDK's default buckets start at 50 ms and would put every local search in the first one.
_SEARCH_BUCKETS_MS = [1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0]
# A reflection waits for its scope's threshold: seconds in a busy scope, days in a quiet one.
_LAG_BUCKETS_MS = [s * 1000.0 for s in (1, 10, 60, 300, 900, 3600, 6 * 3600, 86400, 7 * 86400)]


class MetricsEndpointError(MnemosError):
    """The /metrics endpoint cannot be started (address malformed or already in use)."""


def worker_runtime(settings: Settings) -> Runtime:
    """A Runtime that serves /metrics at ``settings.temporal.metrics_bind``; the default runtime
    when that is empty (no endpoint). Each Runtime binds its port for the life of the process."""
    bind = settings.temporal.metrics_bind
    if not bind:
        return Runtime.default()
    try:
        return Runtime(
            telemetry=TelemetryConfig(
                metrics=PrometheusConfig(
                    bind_address=bind,
                    histogram_bucket_overrides={
                        SEARCH_LATENCY: _SEARCH_BUCKETS_MS,
                        CONSOLIDATION_LAG: _LAG_BUCKETS_MS,
                    },
                )
            )
        )
    except ValueError as e:  # the SDK reports a bad or busy address as ValueError
        raise MetricsEndpointError(f"metrics endpoint {bind}: {e}") from e


def install_runtime(settings: Settings) -> Runtime:
    """Make ``worker_runtime`` the process default, so every Temporal client created afterwards
    (and the worker built on it) exports to the endpoint. Call before the first client connects."""
    runtime = worker_runtime(settings)
    if runtime is not Runtime.default():
        Runtime.set_default(runtime, error_if_already_set=False)
    return runtime


# ---------------------------------------------------------------- worker side


def _domain_error(err: BaseException) -> BaseException:
    """The domain error an activity failed with: activities raise an ApplicationError from it.
    Outcomes go by its class, not by the ApplicationError type names of activities/errors.py,
    which this module, below the activities, does not import."""
    cause: BaseException | None = err
    while cause is not None:
        if isinstance(cause, MnemosError):
            return cause
        cause = cause.__cause__
    return err


def _record_llm(meter: MetricMeter, calls: Sequence[tracing.Answered]) -> None:
    if not calls:
        return
    counter = meter.create_counter(LLM_CALLS, "LLM calls by model", "calls")
    tokens = meter.create_counter(LLM_TOKENS, "LLM tokens by model, input or output", "tokens")
    for call in calls:
        attrs = {"model": call.model, "provider": call.provider, "task": call.task}
        counter.add(1, attrs)
        tokens.add(call.input_tokens, {"model": call.model, "kind": "input"})
        tokens.add(call.output_tokens, {"model": call.model, "kind": "output"})


def _formation(meter: MetricMeter, outcome: str) -> None:
    meter.create_counter(FORMATIONS, "Formation passes by outcome", "formations").add(
        1, {"outcome": outcome}
    )


def _embeddings(meter: MetricMeter, calls: int) -> None:
    if calls:
        meter.create_counter(EMBEDDING_CALLS, "Embedding provider calls", "calls").add(calls)


def _consolidation(meter: MetricMeter, scope: str, outcome: str) -> None:
    meter.create_counter(CONSOLIDATIONS, "Consolidations by scope and outcome", "runs").add(
        1, {"scope": scope, "outcome": outcome}
    )


def _cold(meter: MetricMeter, activity_type: str, result: Any) -> None:
    """The cold-sessions scan: sessions found per page, and what starting their formations did
    (ColdPage and SessionOutcome live in activities/, above this module: read by shape)."""
    if activity_type == "find_cold_sessions":
        found = len(getattr(result, "sessions", []))
        if found:
            meter.create_counter(
                COLD_SESSIONS_FOUND, "Idle sessions found with unformed messages", "sessions"
            ).add(found)
    elif activity_type in ("start_cold_formations", "form_cold_sessions"):
        counter = meter.create_counter(
            COLD_FORMATIONS, "Cold formations asked for, by outcome of the start", "sessions"
        )
        for outcome in result or []:
            counter.add(1, {"outcome": str(getattr(outcome, "outcome", "unknown"))})


def _consolidation_lag(meter: MetricMeter, draft: ConsolidationDraft) -> None:
    if draft.oldest_buffered_at is None:
        return
    waited = datetime.now(UTC) - draft.oldest_buffered_at
    meter.create_histogram_timedelta(
        CONSOLIDATION_LAG, "How long the oldest absorbed reflection waited in its buffer", "ms"
    ).record(max(waited, timedelta(0)), {"scope": draft.key.scope})


def record_result(
    meter: MetricMeter, activity_type: str, result: Any, args: Sequence[Any] = ()
) -> None:
    """What a finished activity tells us. Activity names are those of activities/*.py."""
    _cold(meter, activity_type, result)
    if activity_type == "load_formation_window" and result is None:
        _formation(meter, "nothing_due")
    elif isinstance(result, CommitResult):
        _formation(meter, "already_committed" if result.already_committed else "committed")
        _embeddings(meter, result.embedding_calls)
    elif isinstance(result, CandidatesResult | DecisionsResult):
        _embeddings(meter, result.embedding_calls)
    elif isinstance(result, ConsolidationResult):
        _consolidation(meter, result.key.scope, "applied")
        if args and isinstance(args[0], ConsolidationDraft):
            _consolidation_lag(meter, args[0])
    elif isinstance(result, ConsolidationDraft) and result.content is None:
        _consolidation(meter, result.key.scope, "nothing_to_do")


def record_failure(
    meter: MetricMeter, activity_type: str, args: Sequence[Any], err: BaseException
) -> None:
    """Failed commits and consolidations by cause; other failures are in temporal_activity_*."""
    cause = _domain_error(err)
    if activity_type == "commit_formation":
        outcome = (
            "stale_decision"
            if isinstance(cause, StaleDecisionError)
            else "conflict"
            if isinstance(cause, ConflictError)
            else "failed"
        )
        _formation(meter, outcome)
    elif (
        activity_type == "apply_consolidation" and args and isinstance(args[0], ConsolidationDraft)
    ):
        conflict = isinstance(cause, ConflictError) and not isinstance(cause, StaleDecisionError)
        _consolidation(meter, args[0].key.scope, "conflict" if conflict else "failed")


# Set while an attempt is being recorded: a second _ActivityMetrics further down the same chain
# (the interceptor given to the client and to the worker, another interceptor between them)
# passes the attempt through instead of recording it again.
_recording: contextvars.ContextVar[bool] = contextvars.ContextVar("mnemos_recording", default=False)


class _ActivityMetrics(temporalio.worker.ActivityInboundInterceptor):
    async def execute_activity(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        if _recording.get():
            return await self.next.execute_activity(input)
        token = _recording.set(True)
        try:
            return await self._recorded(input)
        finally:
            _recording.reset(token)

    async def _recorded(self, input: temporalio.worker.ExecuteActivityInput) -> Any:
        activity_type = activity.info().activity_type
        meter = activity.metric_meter()
        # Every answer counts where it was returned, the attempt's outcome aside: an answer the
        # step rejected (then retried, or fell back from) cost its tokens as well.
        with tracing.answers_returned() as answered:
            try:
                result = await self.next.execute_activity(input)
            except Exception as err:  # a cancellation is no outcome: the activity runs again
                record_failure(meter, activity_type, input.args, err)
                raise
            finally:
                _record_llm(meter, answered)
        record_result(meter, activity_type, result, input.args)
        return result


class MetricsInterceptor(temporalio.client.Interceptor, temporalio.worker.Interceptor):
    """Records mnemos' worker metrics from activity results.

    Give it to the Worker (``interceptors=[...]``) or to the Client the worker is built on (a
    worker picks up client interceptors that are worker interceptors too); given both ways, it
    still records once, whatever stands between the two in the chain.
    """

    def intercept_activity(
        self, next: temporalio.worker.ActivityInboundInterceptor
    ) -> temporalio.worker.ActivityInboundInterceptor:
        if isinstance(next, _ActivityMetrics):
            return next
        return _ActivityMetrics(next)
