"""A worker stopped (SIGTERM: run_worker's stop, then Worker.shutdown) while an LLM step runs lets
the step finish: it was cancelled at once, its call paid for and lost, and its retry counted
against the step's attempts."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import TemporalSettings
from tests.harness import Harness, conversation, facts


async def test_a_step_in_flight_finishes_when_its_worker_stops(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # The dev server: the time-skipping one never hands a stopped worker's sticky workflow
    # task to the next worker.
    temporal = TemporalSettings(
        address=dev_env.client.service_client.config.target_host,
        task_queue=f"stop-{uuid.uuid4().hex[:8]}",
        search_attributes=False,
    )
    h = await Harness.create(dev_env, tmp_path, temporal=temporal)
    await h.record("s1", conversation(4))
    started = asyncio.Event()
    calls = 0

    async def slow(request: LLMRequest) -> ExtractedFacts:  # a local model's call
        nonlocal calls
        calls += 1
        started.set()
        await asyncio.sleep(1)
        return facts(("Alice drinks green tea", "user"))

    h.llm.defaults["extract_facts"] = slow
    async with h.worker():
        handle = await h.start("s1")
        await started.wait()
    # The worker has stopped; another one finishes the run.
    async with h.worker():
        summary = await asyncio.wait_for(handle.result(), 60)

    history = await handle.fetch_history()
    retried = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.HasField("activity_task_started_event_attributes")
        and e.activity_task_started_event_attributes.attempt > 1
    ]
    assert (calls, retried) == (1, [])
    assert summary.facts_added == 1
