"""`mnemos schedule ensure|show|pause|unpause|trigger`: the cold-sessions Temporal Schedule."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import typer
from pydantic import BaseModel
from temporalio.client import Client, ScheduleActionExecutionStartWorkflow
from temporalio.service import RPCError, RPCStatusCode

from cli.common import JsonOption, emit, fail, load_settings, progress, run, temporal_of
from memory.settings import Settings
from runtime import schedule as sched

app = typer.Typer(
    help="The cold-sessions schedule: forms idle sessions' pending messages every "
    "MNEMOS_SESSIONS__COLD_SCAN_EVERY_MINUTES and purges ended sessions' memory.",
    no_args_is_help=True,
)


async def _with_client[T](settings: Settings, action: Callable[[Client], Awaitable[T]]) -> T:
    client = await temporal_of(settings)
    try:
        return await action(client)
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            fail(f"no schedule {sched.schedule_id(settings)!r}: run `mnemos schedule ensure` first")
        raise


@app.command()
def ensure(as_json: JsonOption = False) -> None:
    """Create the schedule, or bring it to the current settings. Idempotent; keeps a pause."""
    settings = load_settings()
    outcome = run(_with_client(settings, lambda c: sched.ensure_schedule(c, settings)), settings)
    emit(
        {"schedule_id": sched.schedule_id(settings), "outcome": outcome},
        as_json=as_json,
        text=lambda: f"schedule {sched.schedule_id(settings)}: {outcome}",
    )


class ScheduleView(BaseModel):
    schedule_id: str
    paused: bool
    note: str | None
    every_minutes: list[float]
    actions: int
    skipped_overlap: int
    running: list[str]
    next_runs: list[str]


async def _show(client: Client, settings: Settings) -> ScheduleView:
    desc = await sched.describe_schedule(client, settings)
    return ScheduleView(
        schedule_id=desc.id,
        paused=desc.schedule.state.paused,
        note=desc.schedule.state.note,
        every_minutes=[i.every.total_seconds() / 60 for i in desc.schedule.spec.intervals],
        actions=desc.info.num_actions,
        skipped_overlap=desc.info.num_actions_skipped_overlap,
        running=[
            a.workflow_id
            for a in desc.info.running_actions
            if isinstance(a, ScheduleActionExecutionStartWorkflow)
        ],
        # Temporal lists next times for a paused schedule too: none runs while it is paused.
        next_runs=[]
        if desc.schedule.state.paused
        else [t.isoformat() for t in desc.info.next_action_times[:3]],
    )


@app.command()
def show(as_json: JsonOption = False) -> None:
    """State of the schedule: paused or not, runs so far, the next ones."""
    settings = load_settings()
    view = run(_with_client(settings, lambda c: _show(c, settings)), settings)

    def text() -> str:
        state = f"paused ({view.note})" if view.paused else "active"
        return (
            f"schedule {view.schedule_id}: {state}, every {view.every_minutes} min\n"
            f"runs started: {view.actions}, skipped while one ran: {view.skipped_overlap}\n"
            f"running: {', '.join(view.running) or 'none'}\n"
            f"next: {', '.join(view.next_runs) or 'none (paused)'}"
        )

    emit(view, as_json=as_json, text=text)


@app.command()
def pause(
    note: Annotated[str, typer.Option(help="Why; shown in the Temporal UI.")] = (
        "paused by an operator"
    ),
    as_json: JsonOption = False,
) -> None:
    """Stop starting runs (a running one finishes). Survives worker restarts and updates."""
    settings = load_settings()
    run(_with_client(settings, lambda c: sched.pause_schedule(c, settings, note)), settings)
    emit(
        {"schedule_id": sched.schedule_id(settings), "paused": True},
        as_json=as_json,
        text=lambda: f"schedule {sched.schedule_id(settings)}: paused",
    )


@app.command()
def unpause(as_json: JsonOption = False) -> None:
    """Start runs again at the schedule's interval."""
    settings = load_settings()
    run(_with_client(settings, lambda c: sched.unpause_schedule(c, settings)), settings)
    emit(
        {"schedule_id": sched.schedule_id(settings), "paused": False},
        as_json=as_json,
        text=lambda: f"schedule {sched.schedule_id(settings)}: unpaused",
    )


async def _trigger(client: Client, settings: Settings, wait: bool) -> dict[str, object]:
    handle = await sched.trigger_schedule(client, settings)
    out: dict[str, object] = {"workflow_id": handle.id, "run_id": handle.run_id}
    if wait:
        with progress(f"Waiting for {handle.id} (needs a running worker)…"):
            result = await handle.result()
        out["result"] = result
        out["summary"] = result.summary()
    return out


@app.command()
def trigger(
    wait: Annotated[bool, typer.Option(help="Wait for the run and print what it did.")] = True,
    as_json: JsonOption = False,
) -> None:
    """Run the cold-sessions job now (skipped if one is running: then that run is reported)."""
    settings = load_settings()
    out = run(_with_client(settings, lambda c: _trigger(c, settings, wait)), settings)
    emit(
        out,
        as_json=as_json,
        text=lambda: f"run {out['workflow_id']}: {out.get('summary', 'started')}",
    )
