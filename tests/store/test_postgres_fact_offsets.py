"""The clock a fact was said on, on PostgreSQL, through a rolling upgrade: the body carries the
offset inside said_at (memory.store.postgres.codec.fact_body), and the offset column is what
the version before this one reads. A process of an older version that rewrites the body leaves
the column as it was; what it wrote in the body is the fact's time, so its clock wins."""

from __future__ import annotations

from datetime import UTC, timedelta, timezone

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memory.models import Fact
from memory.store.postgres import PostgresStore
from tests.conftest import fresh_schema
from tests.store.builders import Former, add, at, unit

pytestmark = pytest.mark.postgres

INDIA = timezone(timedelta(minutes=330))
CHICAGO = timezone(timedelta(hours=-5))


async def _formed(dsn: str) -> PostgresStore:
    """A store holding f1, said at at(2) in India."""
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    former = await Former(store).start()
    said = at(2).astimezone(INDIA)
    await former.form(
        add("f1", "Alice flies to Rome", unit(1)).model_copy(update={"said_at": said})
    )
    return store


def _rewrite_said_at(dsn: str, said_at: str) -> None:
    """What a process of an older version does to the row when it updates the fact: a new body,
    the offset column untouched."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        body = conn.execute("SELECT body FROM facts WHERE fact_id = 'f1'").fetchone()
        assert body is not None
        conn.execute(
            "UPDATE facts SET body = %s WHERE fact_id = 'f1'",
            (Jsonb(body[0] | {"said_at": said_at}),),
        )


async def _said(store: PostgresStore) -> tuple[object, int | None]:
    [fact] = await store.get_facts(["f1"])
    assert isinstance(fact, Fact) and fact.said_at is not None
    return fact.said_at, fact.said_utc_offset_minutes


async def test_the_body_carries_the_offset_in_said_at_and_the_column_holds_it(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = await _formed(dsn)
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT body->>'said_at', body ? 'said_utc_offset_minutes', said_utc_offset_minutes "
            "FROM facts WHERE fact_id = 'f1'"
        ).fetchone()
    assert row == (at(2).astimezone(INDIA).isoformat(), False, 330)
    assert await _said(store) == (at(2), 330)
    await store.close()


async def test_an_older_process_rewriting_the_body_gives_the_fact_its_clock(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = await _formed(dsn)
    # The previous version commits a newer worker's update as it got it: said_at on the
    # speaker's clock, now Chicago's; the column still says India.
    _rewrite_said_at(dsn, at(5).astimezone(CHICAGO).isoformat())
    assert await _said(store) == (at(5), -300)
    await store.close()


async def test_a_body_in_utc_takes_the_offset_of_the_column(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = await _formed(dsn)
    # The version before this one wrote bodies in UTC and the offset in the column only.
    _rewrite_said_at(dsn, at(2).astimezone(UTC).isoformat())
    assert await _said(store) == (at(2), 330)
    await store.close()
