"""The cold-sessions schedule bounds each execution (runtime.schedule.EXECUTION_TIMEOUT): with
overlap skip, a run whose workflow task keeps failing (a bug, a NondeterminismError, an input it
cannot decode) would otherwise stay Running forever and skip every later firing. A schedule created
without the bound (by a worker of an older build) gets it from ensure_schedule; once a wedged run
times out, the next firing starts a new one."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import (
    Client,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    WorkflowExecutionStatus,
)
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

import runtime.schedule
from memory.settings import SessionSettings, Settings, TemporalSettings
from runtime.schedule import (
    EXECUTION_TIMEOUT,
    cold_sessions_schedule,
    describe_schedule,
    ensure_schedule,
    schedule_id,
)
from tests.harness import Harness
from workflows.naming import COLD_SESSIONS_WORKFLOW


@workflow.defn(name=COLD_SESSIONS_WORKFLOW)
class WedgedColdSessions:
    """Fails its workflow task: the SDK retries the task, and the run never ends by itself."""

    @workflow.run
    async def run(self, inp: dict[str, Any]) -> None:
        raise RuntimeError("a bug in workflow code (or a NondeterminismError)")


async def harness(env: WorkflowEnvironment, tmp_path: Path) -> Harness:
    temporal = TemporalSettings(
        address=env.client.service_client.config.target_host,
        task_queue=f"cold-timeout-{uuid.uuid4().hex[:8]}",
        search_attributes=False,
    )
    # A week between firings: the schedule's own firings fall on multiples of its interval
    # since the epoch (every 5 minutes by default), and one landing while a test's wedged run is
    # open is skipped, which is what the test asserts never happens to its own trigger.
    sessions = SessionSettings(cold_scan_every_minutes=7 * 24 * 60)
    return await Harness.create(env, tmp_path, temporal=temporal, sessions=sessions)


def _action(schedule: Any) -> ScheduleActionStartWorkflow:
    action = schedule.action
    assert isinstance(action, ScheduleActionStartWorkflow)
    return action


async def test_ensure_schedule_bounds_the_runs_of_a_schedule_created_without_it(
    dev_env: WorkflowEnvironment, tmp_path: Path, cleanup: list[tuple[Client, Settings]]
) -> None:
    h = await harness(dev_env, tmp_path)
    wanted = cold_sessions_schedule(h.settings)
    assert _action(wanted).execution_timeout == EXECUTION_TIMEOUT
    assert timedelta(hours=1) <= EXECUTION_TIMEOUT  # a healthy run over a large backlog fits

    # What a worker of an older build created: the same schedule, its runs unbounded.
    old = dataclasses.replace(
        wanted, action=dataclasses.replace(_action(wanted), execution_timeout=None)
    )
    await h.client.create_schedule(schedule_id(h.settings), old)
    cleanup.append((h.client, h.settings))
    before = await describe_schedule(h.client, h.settings)
    assert _action(before.schedule).execution_timeout is None

    assert await ensure_schedule(h.client, h.settings) == "updated"
    after = await describe_schedule(h.client, h.settings)
    assert _action(after.schedule).execution_timeout == EXECUTION_TIMEOUT
    assert _action(after.schedule).run_timeout is None
    assert await ensure_schedule(h.client, h.settings) == "unchanged"


async def test_a_wedged_run_times_out_and_the_next_firing_starts_a_new_one(
    dev_env: WorkflowEnvironment,
    tmp_path: Path,
    cleanup: list[tuple[Client, Settings]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime.schedule, "EXECUTION_TIMEOUT", timedelta(seconds=3))
    h = await harness(dev_env, tmp_path)
    assert await ensure_schedule(h.client, h.settings) == "created"
    cleanup.append((h.client, h.settings))
    handle = h.client.get_schedule_handle(schedule_id(h.settings))
    async with Worker(
        h.client,
        task_queue=h.settings.temporal.task_queue,
        workflows=[WedgedColdSessions],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        await handle.trigger()
        first = await _running(h)
        wedged = h.client.get_workflow_handle(
            first.workflow_id, run_id=first.first_execution_run_id
        )
        deadline = time.monotonic() + 20
        while (await wedged.describe()).status == WorkflowExecutionStatus.RUNNING:
            assert time.monotonic() < deadline, "the wedged run never timed out"
            await asyncio.sleep(0.2)
        assert (await wedged.describe()).status == WorkflowExecutionStatus.TIMED_OUT

        await handle.trigger()  # not skipped: nothing is running any more
        await _running(h, other_than=first.first_execution_run_id)
    info = (await handle.describe()).info
    assert info.num_actions_skipped_overlap == 0


async def _running(
    h: Harness, other_than: str | None = None
) -> ScheduleActionExecutionStartWorkflow:
    """The schedule's running execution (one other than ``other_than``), once it has one."""
    deadline = time.monotonic() + 10
    while True:
        info = (await describe_schedule(h.client, h.settings)).info
        runs = [
            a
            for a in info.running_actions
            if isinstance(a, ScheduleActionExecutionStartWorkflow)
            and a.first_execution_run_id != other_than
        ]
        if runs:
            return runs[-1]
        assert time.monotonic() < deadline, "the schedule started no run"
        await asyncio.sleep(0.1)
