"""When the earliest of what a blob holds was said (ConsolidatedMemory.said_from) on PostgreSQL, through a rolling
upgrade: columns beside the body, not in it. A process of the previous version refuses a body
with a field it does not know (its ConsolidatedMemory forbids them): it reads every blob this
version writes. Its own writes (version and body) leave the columns as they were: the blob it
consolidated, which may hold something said before said_from, reads as not knowing it (h196)."""

from __future__ import annotations

import psycopg
import pytest
from psycopg.types.json import Jsonb

from memory.models import ConsolidatedMemory
from memory.store.postgres import PostgresStore
from tests.conftest import fresh_schema
from tests.store.builders import USER_KEY, at

pytestmark = pytest.mark.postgres

# The fields of the previous version's ConsolidatedMemory: what its reader takes, and no other.
PREVIOUS = {"scope_key", "content", "version", "word_limit", "updated_at", "edited_by"}


async def test_the_body_is_what_the_previous_version_reads_and_its_blob_does_not_know(
    postgres_dsn: str,
) -> None:
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    try:
        first = await store.commit_consolidation(
            USER_KEY, expected_version=0, content="VERSION: 1\n- jazz", word_limit=50,
            absorbed_ids=[], at=at(10), said_from=at(5),
        )  # fmt: skip
        with psycopg.connect(dsn, autocommit=True) as conn:
            row = conn.execute("SELECT body, said_from FROM consolidated").fetchone()
            assert row is not None
            body, column = row
            assert set(body) == PREVIOUS and column == at(5)
            # The previous version consolidates: a new version and body, the column untouched.
            rewritten = body | {"version": 2, "content": "VERSION: 2\n- jazz, tea"}
            conn.execute("UPDATE consolidated SET version = 2, body = %s", (Jsonb(rewritten),))
        read = await store.get_consolidated(USER_KEY)
    finally:
        await store.close()
    assert first.said_from == at(5)
    assert isinstance(read, ConsolidatedMemory)
    assert (read.version, read.said_from) == (2, None)
