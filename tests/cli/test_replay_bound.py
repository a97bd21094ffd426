"""`mnemos replay --dir` on histories the SDK cannot replay: each is a FAIL naming the file and
why, the others are still replayed, exit code 1; never a hang, never a traceback.

The command runs as a subprocess with a hard deadline, so a replay that is not bounded fails the
test instead of hanging the suite; its per-history limit is lowered to 3 s (REPLAY_TIMEOUT_SECONDS).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory

from cli.replay_runner import ChildReplayer

ROOT = Path(__file__).resolve().parent.parent.parent
GOOD = ROOT / "tests" / "histories" / "form_memories_first.json"
LIMIT_SECONDS = 3
# Well past a bounded run (a start, one limit, a restart, two replays), well short of a hang.
DEADLINE_SECONDS = 45
# `mnemos replay --dir D` with the per-history limit lowered, so the bound answers in seconds.
RUN = (
    "import sys, cli.ops as ops; "
    f"ops.REPLAY_TIMEOUT_SECONDS = {LIMIT_SECONDS}; "
    "from cli.app import main; sys.argv = ['mnemos', 'replay', '--dir', sys.argv[1]]; main()"
)


@dataclass
class Replay:
    code: int
    out: str
    err: str


def replay_dir(directory: Path, tmp_path: Path, cwd: Path = ROOT) -> Replay:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }
    proc = subprocess.Popen(
        # -P: the mnemos script puts no working directory on sys.path, nor does this.
        [sys.executable, "-P", "-c", RUN, str(directory)],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # the replay's own child dies with it on the deadline
    )  # fmt: skip
    try:
        out, err = proc.communicate(timeout=DEADLINE_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"`mnemos replay --dir` still running after {DEADLINE_SECONDS} s")
    assert "Traceback" not in out + err, err[-3000:]
    return Replay(proc.returncode, out, err)


def committed() -> dict[str, Any]:
    history: dict[str, Any] = json.loads(GOOD.read_text())
    return history


def with_events(events: list[dict[str, Any]]) -> dict[str, Any]:
    return {**committed(), "events": events}


def write(directory: Path, name: str, history: dict[str, Any]) -> None:
    directory.mkdir(exist_ok=True)
    (directory / f"{name}.json").write_text(json.dumps(history))


def test_a_replay_still_running_at_the_limit_is_a_fail_and_the_others_still_replay(
    tmp_path: Path,
) -> None:
    # A history cut after its start event: the SDK waits for ever for a workflow task, and
    # cancelling it waited for ever too. Its process is killed; a fresh one replays the rest.
    histories = tmp_path / "histories"
    write(histories, "a_cut", with_events(committed()["events"][:1]))
    write(histories, "b_good", committed())
    write(histories, "c_good", committed())
    result = replay_dir(histories, tmp_path)
    assert result.code == 1, result
    assert f"FAIL a_cut  replay did not finish in {LIMIT_SECONDS} s" in result.out
    assert "ok   b_good" in result.out and "ok   c_good" in result.out
    assert "Replayed 3 histories: 2 ok, 1 failed." in result.out


def _no_workflow_type() -> dict[str, Any]:
    start = {
        "eventId": "1",
        "eventType": "EVENT_TYPE_WORKFLOW_EXECUTION_STARTED",
        "workflowExecutionStartedEventAttributes": {},
    }
    return with_events([start])


def _first_id_5() -> dict[str, Any]:
    events = committed()["events"]
    return with_events([dict(events[0], eventId="5"), *events[1:]])


def test_histories_of_shapes_the_sdk_cannot_replay_fail_at_once_naming_the_file(
    tmp_path: Path,
) -> None:
    # Checked when the files are read: no replay, no waiting for the limit (before, a hang and an
    # assertion in the SDK).
    histories = tmp_path / "histories"
    write(histories, "first_id_5", _first_id_5())
    write(histories, "good", committed())
    write(histories, "no_type", _no_workflow_type())
    result = replay_dir(histories, tmp_path)
    assert result.code == 1, result
    assert (
        f"FAIL first_id_5.json  {histories / 'first_id_5.json'}: "
        "event ids do not count 1, 2, 3…: event 1 has id 5"
    ) in result.out
    assert (
        f"FAIL no_type.json  {histories / 'no_type.json'}: "
        "the WorkflowExecutionStarted event names no workflow type"
    ) in result.out
    assert "ok   good" in result.out
    assert "Replayed 3 histories: 1 ok, 2 failed." in result.out


def first_id_5() -> WorkflowHistory:
    return WorkflowHistory.from_json("first_id_5", json.dumps(_first_id_5()))


async def test_a_replay_the_sdk_gives_up_on_is_a_fail_saying_why_and_the_next_one_replays() -> None:
    # A history `--dir` rejects when it reads it, as one from the server would arrive: the SDK
    # fails an internal assertion (and its core panics), which was a traceback ending the command.
    good = WorkflowHistory.from_json("good", GOOD.read_text())
    async with ChildReplayer(limit=60) as replayer:
        failed = await replayer.replay(first_id_5())
        assert not failed.ok and failed.workflow_id == "first_id_5"
        assert failed.error == "the replay raised AssertionError"
        assert (await replayer.replay(good)).ok


async def test_a_replay_process_that_dies_is_a_fail_and_a_fresh_one_replays_the_rest() -> None:
    good = WorkflowHistory.from_json("good", GOOD.read_text())
    async with ChildReplayer(limit=60) as replayer:
        assert (await replayer.replay(good)).ok
        child = replayer._child  # a crash of the SDK's core, as the operating system sees it
        assert child is not None
        os.kill(child.proc.pid, signal.SIGKILL)
        died = await replayer.replay(good)
        assert not died.ok and died.workflow_id == "good"
        assert (died.error or "").startswith("the replay process crashed (exit code -9")
        assert (await replayer.replay(good)).ok


def test_a_replay_run_from_a_project_with_its_own_worker_and_memory_modules(tmp_path: Path) -> None:
    """Run where an agent project keeps its own worker.py and memory/ (a likely name beside an
    agent): the replay's own process imports mnemos's, not those."""
    project = tmp_path / "project"
    (project / "memory").mkdir(parents=True)
    (project / "worker.py").write_text("raise SystemExit('the project worker.py ran')\n")
    (project / "memory" / "__init__.py").write_text("raise SystemExit('the project memory ran')\n")
    histories = tmp_path / "histories"
    histories.mkdir()
    (histories / GOOD.name).write_text(GOOD.read_text())
    run = replay_dir(histories, tmp_path, cwd=project)
    assert run.code == 0, run.out + run.err
    assert "ran" not in run.out + run.err
