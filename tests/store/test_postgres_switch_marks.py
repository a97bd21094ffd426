"""Migration 18 on PostgreSQL: the memory switches a session's messages were recorded under
(memory/switch_marks.py). A database of migration 17 keeps its sessions, which read no marks
(formed under the switches then, as before), and a change of a switch marks a pending one."""

from __future__ import annotations

import psycopg
import pytest

from memory.models import AgentConfig
from memory.store.postgres import PostgresStore
from memory.store.postgres.schema import MIGRATIONS
from tests.conftest import fresh_schema
from tests.store.builders import msg, record

pytestmark = pytest.mark.postgres


async def test_a_database_of_migration_17_keeps_its_sessions_and_marks_a_switch_change(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    await record(store, "s1", "a1", [msg("m1", "My email is ada@example.com")])
    await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as migration 17 left session_agents
        conn.execute("ALTER TABLE session_agents DROP COLUMN switch_marks")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 18")

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        before = await store.get_session_agent_state("s1", "a1")
        await store.update_agent("a1", {"user_memory_enabled": False})
        after = await store.get_session_agent_state("s1", "a1")
    finally:
        await store.close()
    assert len(MIGRATIONS) >= 18
    assert before is not None and before.switch_marks == ()
    assert after is not None and after.switch_marks == ((1, True, True),)
