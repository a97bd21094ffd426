"""The Prometheus endpoint: after a real formation and consolidation on the dev server, one scrape
returns Temporal's SDK metrics and ours, with the counts the runs reported."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
import temporalio.worker
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.runtime import Runtime
from temporalio.testing import WorkflowEnvironment

from activities.errors import classified
from client.memory_client import MemoryClient
from memory.errors import ConflictError, NotFoundError, StaleDecisionError
from memory.models import ScopeKey
from memory.pipeline.types import ConsolidationDraft
from memory.settings import Settings, TemporalSettings
from runtime import metrics
from runtime.payloads import payload_data_converter
from tests import grafana
from tests.fakes import consolidated
from tests.harness import Harness, conversation, facts, reflections


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _scrape(bind: str) -> dict[str, list[Sample]]:
    with urllib.request.urlopen(f"http://{bind}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {f.name: list(f.samples) for f in text_string_to_metric_families(text)}


def _total(samples: Iterable[Sample], suffix: str = "", **labels: str) -> float:
    """Sum of the samples (of ``suffix``: _count, _sum…) whose labels include ``labels``."""
    return sum(
        s.value
        for s in samples
        if (not suffix or s.name.endswith(suffix))
        and all(s.labels.get(k) == v for k, v in labels.items())
    )


@pytest.fixture
def bind() -> str:
    return f"127.0.0.1:{_free_port()}"


async def _metered(dev_env: WorkflowEnvironment, tmp_path: Path, bind: str) -> Harness:
    """A harness on the worker's client: its runtime serves /metrics at ``bind``, its interceptor
    records our metrics (a worker built on it picks the interceptor up; worker.py may give it to
    the Worker too)."""
    runtime = metrics.worker_runtime(Settings(temporal=TemporalSettings(metrics_bind=bind)))
    client = await Client.connect(
        dev_env.client.service_client.config.target_host,
        data_converter=payload_data_converter,
        runtime=runtime,
        interceptors=[metrics.MetricsInterceptor()],
    )
    h = await Harness.create(dev_env, tmp_path)
    h.client = client
    return h


async def test_one_endpoint_serves_sdk_and_mnemos_metrics(
    dev_env: WorkflowEnvironment, tmp_path: Path, bind: str
) -> None:
    h = await _metered(dev_env, tmp_path, bind)
    client = h.client
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user")))
    h.llm.script("extract_reflections", reflections(user=["w", "x", "y", "z"]))
    memory = MemoryClient(client, h.store, h.settings, embedder=h.embedder)
    async with h.worker():
        formed = await h.form("s1")
        consolidated = await h.consolidation_result(h.key("user"))
        await memory.memory_context("eve", "s1", user_id="alice")  # built: a miss
        await memory.memory_context("eve", "s1", user_id="alice")  # unchanged: a hit
        await memory.search_facts("eve", "Acme Robotics", user_id="alice")

    scraped = await asyncio.to_thread(_scrape, bind)

    assert _total(scraped["mnemos_formations"], outcome="committed") == 1
    assert _total(scraped["mnemos_formations"]) == 1
    calls = formed.llm_calls + consolidated.llm_calls
    assert calls, "the scripted LLM reports usage"
    model = calls[0].model
    assert _total(scraped["mnemos_llm_calls"], model=model) == len(calls)
    assert _total(scraped["mnemos_llm_tokens"], kind="input") == sum(c.input_tokens for c in calls)
    assert _total(scraped["mnemos_llm_tokens"], kind="output") == sum(
        c.output_tokens for c in calls
    )
    assert formed.embedding_calls > 0
    assert _total(scraped["mnemos_embedding_calls"]) == formed.embedding_calls
    assert _total(scraped["mnemos_consolidations"], scope="user", outcome="applied") == 1
    # The lag of that consolidation: how long its oldest reflection had waited in the buffer.
    assert _total(scraped["mnemos_consolidation_lag"], "_count", scope="user") == 1
    assert _total(scraped["mnemos_context_cache_requests"], result="miss") == 1
    assert _total(scraped["mnemos_context_cache_requests"], result="hit") == 1
    assert _total(scraped["mnemos_search_latency"], "_count") == 1
    # The SDK's own metrics, on the same endpoint.
    queue = h.settings.temporal.task_queue
    assert (
        _total(
            scraped["temporal_workflow_completed"], task_queue=queue, workflow_type="FormMemories"
        )
        == 1
    )
    assert _total(scraped["temporal_activity_execution_latency"], "_count", task_queue=queue) > 0
    # Every SDK metric deploy/grafana's dashboard charts is one this endpoint serves.
    charted = {grafana.metric(s) for s in grafana.series() if s.startswith("temporal_")}
    assert charted and charted <= set(scraped), charted - set(scraped)


async def test_an_answer_its_step_rejected_is_counted_with_its_tokens(
    dev_env: WorkflowEnvironment, tmp_path: Path, bind: str
) -> None:
    """A rejected answer cost its tokens: the run reports every answer the model gave, as the
    metrics count them (the figure an operator sums for the bill)."""
    h = await _metered(dev_env, tmp_path, bind)
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=["w", "x", "y", "z"]))
    h.llm.script("consolidate", consolidated())  # no items: rejected, the next attempt is not
    async with h.worker():
        formed = await h.form("s1")
        result = await h.consolidation_result(h.key("user"))

    scraped = await asyncio.to_thread(_scrape, bind)

    assert len(h.llm.calls("consolidate")) == 2
    # The one the blob came from, and the one rejected before it.
    assert [c.task for c in result.llm_calls] == ["consolidate", "consolidate"]
    assert _total(scraped["mnemos_llm_calls"], task="consolidate") == 2
    calls = formed.llm_calls + result.llm_calls
    assert _total(scraped["mnemos_llm_calls"]) == len(calls)
    assert _total(scraped["mnemos_llm_tokens"], kind="output") == sum(
        c.output_tokens for c in calls
    )


def test_a_busy_metrics_address_is_one_clear_error(bind: str) -> None:
    settings = Settings(temporal=TemporalSettings(metrics_bind=bind))
    first = metrics.worker_runtime(settings)  # holds the port while referenced
    with pytest.raises(metrics.MetricsEndpointError, match="already in use"):
        metrics.worker_runtime(settings)
    assert first.metric_meter is not Runtime.default().metric_meter


def test_no_bind_address_means_no_endpoint() -> None:
    settings = Settings(temporal=TemporalSettings(metrics_bind=""))
    assert metrics.worker_runtime(settings) is Runtime.default()


class _Activities(temporalio.worker.ActivityInboundInterceptor):
    """The innermost link of a worker's activity chain (never called here)."""

    def __init__(self) -> None:
        pass


def test_given_to_both_client_and_worker_the_interceptor_wraps_once() -> None:
    # A worker wraps its activity chain with its own interceptors, then with the client's.
    inner = metrics.MetricsInterceptor().intercept_activity(_Activities())
    assert metrics.MetricsInterceptor().intercept_activity(inner) is inner


class _Counter:
    def __init__(
        self, name: str, adds: list[tuple[str, dict[str, str]]], values: list[int]
    ) -> None:
        self.name, self.adds, self.values = name, adds, values

    def add(self, value: int, attrs: dict[str, str] | None = None) -> None:
        self.adds.append((self.name, attrs or {}))
        self.values.append(value)


class _Meter:
    """Records what the worker side adds to counters (the only instrument failures use)."""

    def __init__(self) -> None:
        self.adds: list[tuple[str, dict[str, str]]] = []
        self.values: list[int] = []

    def create_counter(self, name: str, description: str, unit: str) -> _Counter:
        return _Counter(name, self.adds, self.values)


def _raised_by_activity(domain: Exception) -> ApplicationError:
    """What an activity raises: an ApplicationError from the domain error (activities.errors)."""
    try:
        with classified():
            raise domain
    except ApplicationError as err:
        return err
    raise AssertionError("classified() let the domain error through")


@pytest.mark.parametrize(
    ("domain", "formation", "consolidation"),
    [
        (ConflictError("cursor moved"), "conflict", "conflict"),
        (StaleDecisionError("fact changed"), "stale_decision", "failed"),
        (NotFoundError("no agent"), "failed", "failed"),
    ],
)
def test_failed_commits_and_consolidations_are_counted_by_cause(
    domain: Exception, formation: str, consolidation: str
) -> None:
    err = _raised_by_activity(domain)
    meter = _Meter()
    metrics.record_failure(meter, "commit_formation", [], err)  # type: ignore[arg-type]
    draft = ConsolidationDraft(
        key=ScopeKey(scope="user", agent_id="eve", user_id="alice"), base_version=1, word_limit=9
    )
    metrics.record_failure(meter, "apply_consolidation", [draft], err)  # type: ignore[arg-type]
    assert meter.adds == [
        ("mnemos_formations", {"outcome": formation}),
        ("mnemos_consolidations", {"scope": "user", "outcome": consolidation}),
    ]


def test_the_cold_scan_counts_sessions_found_and_the_outcomes_of_their_starts() -> None:
    @dataclass
    class Page:  # activities.sessions.ColdPage's shape
        sessions: list[str]

    @dataclass
    class Outcome:  # activities.sessions.SessionOutcome's
        outcome: str

    meter = _Meter()
    metrics.record_result(meter, "find_cold_sessions", Page(["s1", "s2", "s3"]))  # type: ignore[arg-type]
    metrics.record_result(meter, "find_cold_sessions", Page([]))  # type: ignore[arg-type]
    started = [Outcome("started"), Outcome("started"), Outcome("retry_later")]
    metrics.record_result(meter, "start_cold_formations", started)  # type: ignore[arg-type]
    assert meter.adds == [
        ("mnemos_cold_sessions_found", {}),
        ("mnemos_cold_formations", {"outcome": "started"}),
        ("mnemos_cold_formations", {"outcome": "started"}),
        ("mnemos_cold_formations", {"outcome": "retry_later"}),
    ]
    assert meter.values == [3, 1, 1, 1]
