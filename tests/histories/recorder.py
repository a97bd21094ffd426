"""What every recorder of a committed history does around its scenario: a time-skipping server of
its own (its clock skips as the run waits), and the history written where test_replay finds it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_test_server
from runtime.payloads import payload_data_converter

HISTORIES = Path(__file__).parent


@asynccontextmanager
async def time_skipping() -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
    )
    try:
        yield env
    finally:
        await env.shutdown()


def save(history: WorkflowHistory, name: str) -> None:
    """``name``: the history's path under tests/histories/ (its folder made if missing)."""
    path = HISTORIES / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(history.to_json())
    print(f"recorded {name} ({len(history.events)} events)")
