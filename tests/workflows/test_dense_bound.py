"""A message stating more facts than a window of one message keeps (pieces.MAX_DENSE_FACTS): the
facts past the bound are not formed, and that is said where operators look, not only in a worker
log line: the run's summary (what `mnemos form` prints), its memo, and a metric (H98 D4)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.client import Client
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.testing import WorkflowEnvironment

from memory.llm.heuristic import HeuristicProvider
from memory.pipeline import pieces
from memory.settings import FactSettings
from runtime.payloads import payload_data_converter
from tests.harness import Harness
from tests.workflows.test_dense_message import dense, memo
from tests.workflows.test_long_message import said
from workflows.naming import OVER_BOUND_METRIC

STATED = 400  # 320 formed, 80 past the bound (about 11,000 characters: one slice)


async def _dense_harness(env: WorkflowEnvironment, tmp_path: Path) -> Harness:
    """The offline provider: each piece's answer says every fact of its text."""
    h = await Harness.create(env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    return h


async def test_facts_past_the_bound_are_counted_in_the_summary_and_the_memo(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await _dense_harness(time_env, tmp_path)
    assert pieces.MAX_DENSE_FACTS == 320
    await h.record("s1", [said(dense(STATED))])
    async with h.worker():
        summary = await h.form("s1")
        written = await memo(h)

    assert len(await h.all_facts()) == pieces.MAX_DENSE_FACTS
    lost = STATED - pieces.MAX_DENSE_FACTS
    # The line `mnemos form` prints from the result a client reads back, and its field.
    line = f"{lost} fact(s) dropped past a window's bound"
    assert line in str(summary.memo()["summary"])
    assert summary.facts_over_bound == lost
    # The memo, which the Temporal UI shows of the run.
    assert written["facts_over_bound"] == lost
    assert line in str(written["summary"])
    # The bound is by design, not a fallback: nothing to re-form, no degraded step.
    assert summary.degraded == [] and summary.passed_over == 0


async def test_a_dense_message_within_the_bound_reports_no_loss(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Read in pieces, every fact kept: the memo is what runs had before the count."""
    h = await _dense_harness(time_env, tmp_path)
    await h.record("s1", [said(dense(90))])
    async with h.worker():
        summary = await h.form("s1")
        written = await memo(h)

    assert len(await h.all_facts()) == 90
    assert "facts_over_bound" not in written and "dropped" not in str(written["summary"])
    assert summary.dense_messages == 1 and summary.facts_over_bound == 0


async def test_facts_past_the_bound_are_counted_by_the_workers_metric(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The counter a dashboard or an alert reads (a workflow metric, emitted once: not again
    when a worker replays the run)."""
    buffer = MetricBuffer(100_000)
    client = await Client.connect(
        dev_env.client.service_client.config.target_host,
        data_converter=payload_data_converter,
        runtime=Runtime(telemetry=TelemetryConfig(metrics=buffer)),
    )
    h = await _dense_harness(dev_env, tmp_path)
    h.client = client  # the worker built on it reports to its runtime's buffer
    await h.record("s1", [said(dense(STATED))])
    async with h.worker():
        summary = await h.form("s1")

    counted = [
        (u.value, dict(u.attributes))
        for u in buffer.retrieve_updates()
        if u.metric.name == OVER_BOUND_METRIC
    ]
    assert sum(v for v, _ in counted) == STATED - pieces.MAX_DENSE_FACTS
    assert {a["bound"] for _, a in counted} == {"facts"}
    assert summary.facts_over_bound == STATED - pieces.MAX_DENSE_FACTS


# Words that make each stated fact long (about 275 characters), as dense prose is.
_LONG = (
    "according to extraordinarily comprehensive documentation concerning supplementary "
    "specifications regarding interoperability considerations internationalization "
    "responsibilities accompanying institutionalised telecommunications infrastructure"
)


async def test_a_dense_message_forms_with_the_most_dedup_candidates(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """320 long facts, each with 20 candidates (the setting's most): their texts were 2.3 MB in
    the decision's payloads, over Temporal's 2 MB, and the run failed its workflow task for
    ever, the session's cursor never moving. A real server refuses them; the test server
    does not, so this runs on the dev server."""
    h = await Harness.create(dev_env, tmp_path, facts=FactSettings(dedup_candidates=20))
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    text = " ".join(f"My favourite number {i} is {4100 + i} {_LONG}." for i in range(1, 331))
    await h.record("s1", [said(text)])
    async with h.worker():
        handle = await h.start("s1")
        summary = await asyncio.wait_for(handle.result(), timeout=120)

    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 1
    assert summary.facts_added == pieces.MAX_DENSE_FACTS
