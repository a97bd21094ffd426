"""What a MemoryClient records: context-cache hits and misses, ``search_facts`` latency, on the
meter of the runtime its Temporal client runs on (``runtime.metrics``: one /metrics endpoint with
the worker's, when the process installed one; a no-op meter otherwise)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import temporalio.client
from temporalio.common import MetricMeter
from temporalio.runtime import Runtime

from memory.context_cache import ContextCache
from runtime.metrics import CONTEXT_CACHE, FORMATIONS_DEFERRED, SEARCH_LATENCY


def client_meter(temporal: temporalio.client.Client) -> MetricMeter:
    """The meter of the runtime a Temporal client runs on (a no-op one without metrics)."""
    runtime = temporal.service_client.config.runtime or Runtime.default()
    return runtime.metric_meter


class ClientMetrics:
    """Context cache hits/misses, search latency and deferred triggers of one MemoryClient."""

    def __init__(self, meter: MetricMeter) -> None:
        self._cache = meter.create_counter(
            CONTEXT_CACHE, "Memory context requests by cache result (hit or miss)", "requests"
        )
        self._search = meter.create_histogram_timedelta(
            SEARCH_LATENCY, "search_facts latency, embedding included", "ms"
        )
        self._deferred = meter.create_counter(
            FORMATIONS_DEFERRED,
            "Hot formation triggers deferred because Temporal did not answer in time",
            "triggers",
        )
        self._seen_hits = 0
        self._seen_misses = 0

    def observe_cache(self, cache: ContextCache) -> None:
        """Export what the cache counted since the last call. Deltas of its own counters, so
        concurrent requests interleaving with this call are never lost nor counted twice."""
        hits, misses = cache.hits, cache.misses
        if hits > self._seen_hits:
            self._cache.add(hits - self._seen_hits, {"result": "hit"})
        if misses > self._seen_misses:
            self._cache.add(misses - self._seen_misses, {"result": "miss"})
        self._seen_hits, self._seen_misses = hits, misses

    def formation_deferred(self, reason: str) -> None:
        self._deferred.add(1, {"reason": reason})

    @contextmanager
    def timed_search(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self._search.record(timedelta(seconds=time.perf_counter() - start))
