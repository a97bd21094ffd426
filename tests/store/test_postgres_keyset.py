"""PostgreSQL: a page read by cursor (after a fact's key) reads its index from the key on: without
the key's bound beside the tie-breaking OR, the planner scanned facts_recent from the newest fact
and filtered every row down to the key, as an offset costs (82,000 rows for a deep page of 100k;
review H176)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

from memory.models import FactFilter
from memory.store.postgres import PostgresStore
from memory.store.postgres.db import PostgresDb
from tests.conftest import fresh_schema

pytestmark = pytest.mark.postgres

N = 100_000


async def test_a_deep_page_by_cursor_reads_only_near_its_key(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "INSERT INTO facts (fact_id, agent_id, user_id, scope, hash, updated_at, embedding, "
            "embedding_model, terms, body) SELECT 'f_' || lpad(to_hex(i), 8, '0'), 'a1', "
            "CASE WHEN i % 2 = 1 THEN 'u1' END, CASE WHEN i % 2 = 1 THEN 'user' ELSE 'agent' END, "
            "'h' || i, timestamptz '2026-01-01' + (i / 5) * interval '1 second', '[0,0,0]', 'm', "
            "''::tsvector, jsonb_build_object('content', 'fact ' || i) "
            f"FROM generate_series(1, {N}) i"
        )
        c.execute("ANALYZE facts")
    plans: list[dict[str, Any]] = []
    real_fetch = PostgresDb.fetch

    async def explained(self: PostgresDb, sql: str, params: Any = ()) -> list[Any]:
        if "ORDER BY f.updated_at" not in sql:
            return await real_fetch(self, sql, params)
        cur = await self.conn.execute(("EXPLAIN (ANALYZE, FORMAT JSON) " + sql).encode(), params)
        row = await cur.fetchone()
        assert row is not None
        plans.append(next(iter(dict(row).values()))[0]["Plan"])
        return []

    monkeypatch.setattr(PostgresDb, "fetch", explained)
    try:
        flt = FactFilter(agent_id="a1", user_id="u1", include_agent_scope=True)
        key = (datetime(2026, 1, 1, 1, 0, 0, tzinfo=UTC), "f_00004650")  # 82,000 facts down
        await store.list_facts(flt, limit=51, after=key)
    finally:
        await store.close()

    def removed(plan: dict[str, Any]) -> int:
        return int(plan.get("Rows Removed by Filter", 0)) + sum(
            removed(p) for p in plan.get("Plans", [])
        )

    [plan] = plans
    assert removed(plan) < 1_000, f"{removed(plan)} rows read and dropped to reach the key"
