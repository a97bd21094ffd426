"""The session's time-skipping Temporal server (tests/conftest.py ``time_env``), kept as each test
found it: the runs a test left open are ended, and its clock must still skip.

The test server (temporalio 1.x's, measured here) holds its clock for good in two cases:

- a run ended before any worker took its first workflow task. The scheduled task locks the
  clock, and terminating the run does not release it. This happens when a run was started on a
  queue nobody polls (the MCP server's ``remember``), or when a consolidation was requested just
  before the test's worker stopped. Such a run is first given to a worker that takes any
  workflow type and only waits, and is then terminated.
- results awaited concurrently (``asyncio.gather`` over handles). Each wait unlocks the clock
  and locks it again, but the unlocks do not add up, so the clock skips while activities run
  and stays locked afterwards. Tests await them one after the other (``Harness.results``).

Every later test needing a timer would otherwise wait in real time (the suite hung under
``pytest --dist worksteal``, where another test order put one of these first). A test that
still leaves the clock locked fails, and the server is started afresh for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import (
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.common import RawValue
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from cli.binaries import temporal_test_server
from runtime.payloads import payload_data_converter

# A virtual minute passes in milliseconds on a skipping clock; this long, it is locked.
_LOCKED_AFTER_SECONDS = 10.0
# How long a run no worker took may take to be taken by _TakesFirstTask.
_TAKEN_WITHIN_SECONDS = 10.0


class StartedIds(Interceptor):
    """The id of every workflow started through the server's client (by a test, or by a worker's
    activity: a formation signal-with-starting its consolidation). The test server cannot list
    its runs, so they are ended by id."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _RecordStarts(next, self)

    def take(self) -> list[str]:
        """The ids recorded since the last take."""
        ids, self.ids = self.ids, set()
        return sorted(ids)


class _RecordStarts(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, started: StartedIds) -> None:
        super().__init__(next)
        # The recorder, not its set: take() replaces the set after each test, and a client
        # made earlier (this one is made once per client) must record into the new one.
        self._started = started

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        self._started.ids.add(input.id)
        return await super().start_workflow(input)


STARTED = StartedIds()


def ends_with_the_test(workflow_id: str) -> None:
    """End this run with the test, like those started through the server's client (one started
    by a subprocess, through a client of its own)."""
    STARTED.ids.add(workflow_id)


@workflow.defn(dynamic=True)
class _TakesFirstTask:
    """Takes the first workflow task of a run of any type, so that the test server releases the
    lock that task holds on its clock, and waits to be terminated."""

    @workflow.run
    async def run(self, args: Sequence[RawValue]) -> None:
        await workflow.wait_condition(lambda: False)


class TimeServer:
    """The session's server, started on first use, and again after a test left it locked."""

    def __init__(self) -> None:
        self.env: WorkflowEnvironment | None = None

    async def current(self) -> WorkflowEnvironment:
        if self.env is None:
            self.env = await WorkflowEnvironment.start_time_skipping(
                test_server_existing_path=str(temporal_test_server()),
                data_converter=payload_data_converter,
                interceptors=[STARTED],
            )
        return self.env

    async def stop(self) -> None:
        if self.env is not None:
            env, self.env = self.env, None
            await env.shutdown()

    async def end_test(self) -> bool:
        """End the runs the test left open; False when the clock no longer skips (the server is
        then stopped: the next test starts another)."""
        env = await self.current()
        await _end_runs(env, STARTED.take())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(env.sleep(60), _LOCKED_AFTER_SECONDS)
            return True
        await self.stop()
        return False


async def _end_runs(env: WorkflowEnvironment, ids: list[str]) -> None:
    running: list[WorkflowHandle[Any, Any]] = []
    untaken: dict[str, list[WorkflowHandle[Any, Any]]] = {}
    for workflow_id in ids:
        handle = env.client.get_workflow_handle(workflow_id)
        with contextlib.suppress(RPCError):  # never started
            described = await handle.describe()
            if described.status != WorkflowExecutionStatus.RUNNING:
                continue
            running.append(handle)
            if not await _taken(handle):
                untaken.setdefault(described.task_queue, []).append(handle)
    for queue, handles in untaken.items():
        async with Worker(
            env.client,
            task_queue=queue,
            workflows=[_TakesFirstTask],
            workflow_runner=UnsandboxedWorkflowRunner(),
            identity=f"takes-first-task-{uuid.uuid4().hex[:8]}",
        ):
            async with asyncio.timeout(_TAKEN_WITHIN_SECONDS):
                for handle in handles:
                    # The worker takes the task on its own; the history is the only sign of it.
                    while not await _taken(handle):  # noqa: ASYNC110
                        await asyncio.sleep(0.05)
    for handle in running:
        with contextlib.suppress(RPCError):  # ended meanwhile
            await handle.terminate(reason="the test that started it ended")


async def _taken(handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether a worker completed a workflow task of the run."""
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return True
    return False
