"""The child process of `mnemos replay`: replays the histories its parent sends, one at a time.

The SDK can hang for ever on a history it cannot start (cancelling the replay waits for a replay
worker that never shuts down) or fail an internal assertion; only a process of its own can be
bounded for real, so the parent (cli/replay_runner.py) kills it on the limit and starts another.

Wire: one JSON line per history on stdin ({"workflow_id", "history"}); on stdout a ready line
once the workflows are imported, then one ChildReport line per history.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import IO, Any

from pydantic import BaseModel
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

READY = "ready"


class ReplayOutcome(BaseModel):
    workflow_id: str
    run_id: str
    ok: bool
    error: str | None = None


class ChildReport(BaseModel):
    outcome: ReplayOutcome
    # The SDK raised instead of reporting: its replay runtime may be broken, so this child stops
    # and the next history gets a fresh one.
    stopping: bool = False


def encode(history: WorkflowHistory) -> bytes:
    """The line the parent sends for one history."""
    line = {"workflow_id": history.workflow_id, "history": history.to_json_dict()}
    return json.dumps(line).encode() + b"\n"


def _decode(line: str) -> WorkflowHistory:
    data: dict[str, Any] = json.loads(line)
    return WorkflowHistory.from_json(data["workflow_id"], data["history"])


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


async def replay_one(replayer: Replayer, history: WorkflowHistory) -> ChildReport:
    """A history's outcome; an exception of the SDK (a panic is a BaseException) is its FAIL."""
    try:
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # any crash of a replay is its FAIL
        failure = f"the replay raised {_why(exc)}"
        return ChildReport(outcome=_outcome(history, failure), stopping=True)
    error = None if result.replay_failure is None else _why(result.replay_failure)
    return ChildReport(outcome=_outcome(history, error))


def _outcome(history: WorkflowHistory, error: str | None) -> ReplayOutcome:
    return ReplayOutcome(
        workflow_id=history.workflow_id, run_id=history.run_id, ok=error is None, error=error
    )


def _replayer() -> Replayer:
    from memory.settings import read_settings
    from runtime.codec import data_converter
    from worker import WORKFLOWS

    return Replayer(workflows=list(WORKFLOWS), data_converter=data_converter(read_settings().codec))


def _send(out: IO[str], text: str) -> None:
    out.write(text + "\n")
    out.flush()


async def _serve(out: IO[str]) -> None:
    replayer = _replayer()
    _send(out, READY)
    while line := await asyncio.to_thread(sys.stdin.readline):
        report = await replay_one(replayer, _decode(line))
        _send(out, report.model_dump_json())
        if report.stopping:
            return


def _private_stdout() -> IO[str]:
    """The wire, on a copy of stdout; whatever else prints (the SDK's core, a library) goes to
    stderr, so it cannot garble a report line."""
    wire = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return wire


def main() -> None:
    asyncio.run(_serve(_private_stdout()))


if __name__ == "__main__":
    main()
