"""Migration 18 on PostgreSQL: the memory switches a session's messages were recorded under
(memory/switch_marks.py). A database of migration 17 keeps its sessions, which read no marks
(formed under the switches then, as before), and a change of a switch marks a pending one."""

from __future__ import annotations

import psycopg
import pytest

from memory.store.postgres import PostgresStore
from memory.store.postgres.migrations import MIGRATIONS
from tests.conftest import fresh_schema
from tests.store.builders import a_pending_session, assert_upgraded_session_marked

pytestmark = pytest.mark.postgres


async def test_a_database_of_migration_17_keeps_its_sessions_and_marks_a_switch_change(
    postgres_dsn: str,
) -> None:
    assert len(MIGRATIONS) >= 18
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    await a_pending_session(store)
    with psycopg.connect(dsn, autocommit=True) as conn:  # as migration 17 left session_agents
        conn.execute("ALTER TABLE session_agents DROP COLUMN switch_marks")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 18")

    await assert_upgraded_session_marked(PostgresStore(dsn, pool_size=1))
