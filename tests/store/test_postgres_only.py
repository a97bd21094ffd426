"""What only the PostgreSQL backend has: its versioned migrations, run at every start."""

from __future__ import annotations

import asyncio

import numpy as np
import psycopg
import pytest

from memory.store.postgres import PostgresStore
from memory.store.postgres.schema import MIGRATIONS
from tests.conftest import fresh_schema
from tests.store.builders import Former, add, at, unit, user_filter

pytestmark = pytest.mark.postgres


def _applied(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    return [int(row[0]) for row in rows]


async def test_workers_starting_together_apply_each_migration_once(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    stores = [PostgresStore(dsn, pool_size=1) for _ in range(4)]
    await asyncio.gather(*(store.setup() for store in stores))
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    # A restart applies nothing again and keeps what is stored.
    await stores[0].put_embeddings("m", {"h": np.array([1.0, 0.0], dtype=np.float32)})
    again = PostgresStore(dsn, pool_size=1)
    await again.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    assert list(await again.get_embeddings("m", ["h"])) == ["h"]
    for store in (*stores, again):
        await store.close()


async def test_a_database_at_an_older_version_is_brought_up_to_date(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:  # what a version-1 deployment holds
        conn.execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(MIGRATIONS[0].encode())
        conn.execute("INSERT INTO schema_migrations (version) VALUES (1)")
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'facts'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
    assert row is not None and row[0] == "p"  # migration 2: vectors stay in the row
    await store.close()


async def test_migration_3_fills_said_at_from_the_facts_stored_before_it(postgres_dsn: str) -> None:
    """The context FIFO selects by the said_at column: facts stored before it had one read theirs
    from their bodies, and those without one count from when they were stored."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    former = await Former(store).start()
    await former.form(add("unsaid", "Fact without provenance", unit(0, 1)))  # stored at 100
    await former.form(add("said", "Fact said at 500", unit(1, 0)).model_copy(
        update={"said_at": at(500)}
    ))  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as conn:  # as a version-2 database holds them
        conn.execute("DROP INDEX facts_said")
        conn.execute("ALTER TABLE facts DROP COLUMN said_at")
        conn.execute("DELETE FROM schema_migrations WHERE version = 3")
    await store.close()

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    recent = await store.recent_facts(user_filter(), since=at(200), limit=5)
    assert [f.fact_id for f in recent] == ["said"]
    everything = await store.recent_facts(user_filter(), since=at(0), limit=5)
    assert [f.fact_id for f in everything] == ["said", "unsaid"]
    await store.close()
