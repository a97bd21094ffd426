"""The cold-sessions Temporal Schedule: created or updated idempotently, paused, triggered.

Every worker calls ``ensure_schedule`` at start-up (unless ``temporal.schedule_on_start`` is off),
and ``mnemos schedule ensure`` (``make schedule``) does the same by hand; ``mnemos schedule
show|pause|unpause|trigger`` do the rest. The schedule runs ``ColdSessions`` every
``sessions.cold_scan_every_minutes`` with overlap policy skip: a run still draining a backlog is
never doubled, the next firing after it ends picks up what remains. Each execution is bounded
(``EXECUTION_TIMEOUT``), so a run that can never finish does not skip every later firing. An
operator's pause survives updates and worker restarts.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any, Literal

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
    ScheduleUpdateInput,
    WorkflowHandle,
)

from memory.settings import Settings
from workflows.cold_sessions import ColdSessionsInput, ColdSessionsResult
from workflows.naming import (
    COLD_SESSIONS_WORKFLOW,
    cold_sessions_schedule_id,
    cold_sessions_workflow_id,
)

EnsureOutcome = Literal["created", "updated", "unchanged"]

# Temporal's smallest catch-up window. A firing missed while the server was down is not worth
# replaying: the next one covers the same sessions.
_MIN_CATCHUP = timedelta(seconds=10)
# The longest one scheduled execution may last, over its whole continue-as-new chain. Overlap skip
# means every firing is skipped while a run is open: without a bound, a run whose workflow task
# keeps failing (a bug, a NondeterminismError, an input it cannot decode) stays Running forever and
# the job stops for good. Generous on purpose: a healthy run only starts formations (it does not
# wait on them), a page takes a few seconds, so six hours drain a backlog of hundreds of
# thousands of cold sessions; and a run cut short loses nothing: the next firing walks the index
# again from the start, and what was formed has left it. A fixed bound, not a multiple of the
# interval: a wedged run holds the job at most this long, whatever the interval.
EXECUTION_TIMEOUT = timedelta(hours=6)


def schedule_id(settings: Settings) -> str:
    return cold_sessions_schedule_id(settings.temporal.task_queue)


def cold_sessions_schedule(settings: Settings) -> Schedule:
    every = timedelta(minutes=settings.sessions.cold_scan_every_minutes)
    queue = settings.temporal.task_queue
    return Schedule(
        action=ScheduleActionStartWorkflow(
            COLD_SESSIONS_WORKFLOW,
            ColdSessionsInput.from_settings(settings),
            id=cold_sessions_workflow_id(queue),
            task_queue=queue,
            execution_timeout=EXECUTION_TIMEOUT,
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(
            overlap=ScheduleOverlapPolicy.SKIP, catchup_window=max(every, _MIN_CATCHUP)
        ),
    )


async def _same(client: Client, current: Schedule, desired: Schedule) -> bool:
    now, want = current.action, desired.action
    if not isinstance(now, ScheduleActionStartWorkflow) or not isinstance(
        want, ScheduleActionStartWorkflow
    ):
        return False
    return (
        now.workflow == want.workflow
        and now.id == want.id
        and now.task_queue == want.task_queue
        and now.execution_timeout == want.execution_timeout
        and now.run_timeout == want.run_timeout
        and list(now.args) == await client.data_converter.encode(want.args)
        and [i.every for i in current.spec.intervals] == [i.every for i in desired.spec.intervals]
        and current.policy.overlap == desired.policy.overlap
        and current.policy.catchup_window == desired.policy.catchup_window
    )


async def ensure_schedule(client: Client, settings: Settings) -> EnsureOutcome:
    """Create the schedule, or bring its action, interval and policy to these settings. Idempotent
    and safe when several workers start at once; a paused schedule stays paused."""
    desired = cold_sessions_schedule(settings)
    try:
        await client.create_schedule(schedule_id(settings), desired)
        return "created"
    except ScheduleAlreadyRunningError:
        pass
    changed = False

    async def update(current: ScheduleUpdateInput) -> ScheduleUpdate | None:
        nonlocal changed
        existing = current.description.schedule
        if await _same(client, existing, desired):
            return None
        changed = True
        desired.state = existing.state  # keep an operator's pause and its note
        return ScheduleUpdate(schedule=desired)

    await client.get_schedule_handle(schedule_id(settings)).update(update)
    return "updated" if changed else "unchanged"


async def describe_schedule(client: Client, settings: Settings) -> ScheduleDescription:
    return await client.get_schedule_handle(schedule_id(settings)).describe()


async def pause_schedule(
    client: Client, settings: Settings, note: str = "paused by an operator"
) -> None:
    await client.get_schedule_handle(schedule_id(settings)).pause(note=note)


async def unpause_schedule(
    client: Client, settings: Settings, note: str = "unpaused by an operator"
) -> None:
    await client.get_schedule_handle(schedule_id(settings)).unpause(note=note)


async def trigger_schedule(
    client: Client, settings: Settings, *, within_seconds: float = 30
) -> WorkflowHandle[Any, ColdSessionsResult]:
    """Run the job now, under the schedule's overlap policy, and return a handle on the run that
    serves the request: the new one, or the one already running when the trigger was skipped.
    Its ``result()`` follows continue-as-new to the totals of the whole execution."""
    handle = client.get_schedule_handle(schedule_id(settings))
    before = (await handle.describe()).info
    await handle.trigger()
    deadline = time.monotonic() + within_seconds
    while True:
        info = (await handle.describe()).info
        started = info.num_actions > before.num_actions
        skipped = info.num_actions_skipped_overlap > before.num_actions_skipped_overlap
        if started or skipped:
            runs = [
                a
                for a in [*info.running_actions] or [r.action for r in info.recent_actions]
                if isinstance(a, ScheduleActionExecutionStartWorkflow)
            ]
            if runs:  # the newest start; when skipped, the run that blocked it
                return client.get_workflow_handle(
                    runs[-1].workflow_id,
                    run_id=runs[-1].first_execution_run_id,
                    result_type=ColdSessionsResult,
                )
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"schedule {handle.id} did not act on the trigger in {within_seconds}s"
            )
        await asyncio.sleep(0.1)
