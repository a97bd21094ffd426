"""Each replay of `mnemos replay` bounded for real: the histories go to a child process
(cli/replay_child.py) one at a time; one still running at the limit, or a child that dies, is that
history's FAIL, and a fresh child replays the rest. One child serves every history until then, so
fifty good histories pay one interpreter start, not fifty."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
import tempfile
from typing import IO

from temporalio.client import WorkflowHistory

from cli.replay_child import READY, ChildReport, ReplayOutcome, encode
from memory.errors import MnemosError

# Importing the workflows takes a few seconds on a slow machine; a child not ready after this
# will not be ready at all (its stderr says why).
CHILD_START_SECONDS = 120.0
# A child asked to stop after the last history exits at once; past this it is killed.
CHILD_STOP_SECONDS = 10.0
# A history's JSON can be megabytes; a report line is small, but allow a long error message.
_LINE_LIMIT = 64 * 1024 * 1024
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class ReplayChildError(MnemosError):
    """The child process could not start: no history can be replayed (its last stderr line)."""


class _Child:
    """One running child process, its stderr kept in a file for the reason of a crash."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr: IO[bytes]) -> None:
        self.proc = proc
        self.stderr = stderr

    @classmethod
    async def start(cls) -> _Child:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        # -P: not the working directory first on sys.path, as `-m` would put it: a project's own
        # worker.py or memory/ there would be imported instead of mnemos's (the mnemos script
        # never puts it there either). PYTHONPATH still counts.
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-P", "-m", "cli.replay_child",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
            limit=_LINE_LIMIT,
        )  # fmt: skip
        child = cls(proc, stderr)
        try:
            line = await asyncio.wait_for(child.read_line(), CHILD_START_SECONDS)
        except TimeoutError:
            line = b""
        if line.strip() != READY.encode():
            why = await child.stop(kill=True)
            raise ReplayChildError(f"the replay process did not start: {why}")
        return child

    async def read_line(self) -> bytes:
        assert self.proc.stdout is not None  # a PIPE by construction
        return await self.proc.stdout.readline()

    async def send(self, history: WorkflowHistory) -> bool:
        """False when the child is gone (it crashed on an earlier line or at start-up)."""
        assert self.proc.stdin is not None  # a PIPE by construction
        try:
            self.proc.stdin.write(encode(history))
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    async def stop(self, *, kill: bool) -> str:
        """Ends the child (closing its stdin asks it to; kill or a slow exit kills it) and says
        how it ended: its exit code and the last line it wrote on stderr."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        if kill and self.proc.returncode is None:
            self.proc.kill()
        try:
            code = await asyncio.wait_for(self.proc.wait(), CHILD_STOP_SECONDS)
        except TimeoutError:
            self.proc.kill()
            code = await self.proc.wait()
        last = self._last_stderr_line()
        self.stderr.close()
        return f"exit code {code}" + (f": {last}" if last else "")

    def _last_stderr_line(self) -> str:
        self.stderr.seek(0)
        lines = _ANSI.sub("", self.stderr.read().decode(errors="replace")).splitlines()
        return next((line.strip() for line in reversed(lines) if line.strip()), "")


class ChildReplayer:
    """Replays histories in a child process, each bounded by ``limit`` seconds for real."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self._child: _Child | None = None

    async def __aenter__(self) -> ChildReplayer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._drop(kill=exc[0] is not None)

    async def replay(self, history: WorkflowHistory) -> ReplayOutcome:
        if self._child is None:
            self._child = await _Child.start()
        child = self._child
        line = await self._answer(child, history)
        if line is None:
            await self._drop(kill=True)
            return _failed(history, f"replay did not finish in {self.limit:g} s")
        if not line:
            why = await self._drop(kill=True)
            return _failed(history, f"the replay process crashed ({why})")
        report = ChildReport.model_validate_json(line)
        if report.stopping:
            await self._drop(kill=False)
        return report.outcome

    async def _answer(self, child: _Child, history: WorkflowHistory) -> bytes | None:
        """The child's report line; b"" when it died; None when it is still replaying at the
        limit."""
        try:
            return await asyncio.wait_for(self._exchange(child, history), self.limit)
        except TimeoutError:
            return None

    @staticmethod
    async def _exchange(child: _Child, history: WorkflowHistory) -> bytes:
        # Sending is inside the bound too: a stuck child stops reading a history of megabytes.
        if not await child.send(history):
            return b""
        return await child.read_line()

    async def _drop(self, *, kill: bool) -> str:
        child, self._child = self._child, None
        if child is None:
            return ""
        with contextlib.suppress(ProcessLookupError):
            return await child.stop(kill=kill)
        return "exit code unknown"


def _failed(history: WorkflowHistory, why: str) -> ReplayOutcome:
    return ReplayOutcome(
        workflow_id=history.workflow_id, run_id=history.run_id, ok=False, error=why
    )
