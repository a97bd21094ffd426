"""What only the SQLite backend promises: WAL, several stores (threads, processes) on one file,
an event loop that never waits on the database, an index for the cold-sessions scan."""

from __future__ import annotations

import asyncio
import math
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest

from memory.formation_commit import FactInvalidate
from memory.store.sql.sessions import COLD_SESSIONS_SQL
from memory.store.sqlite import SQLiteStore
from memory.store.sqlite.db import sqlite_sql
from tests.store.builders import (
    CHARS_PER_TOKEN,
    WEIGHTS,
    Former,
    add,
    at,
    msg,
    unit,
    user_filter,
    vec,
)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Path]:
    """A database file set up by one store (closed again)."""
    path = tmp_path / "shared.db"
    store = SQLiteStore(path)
    await store.setup()
    await store.close()
    yield path


@pytest.fixture
async def pair(db: Path) -> AsyncIterator[tuple[SQLiteStore, SQLiteStore]]:
    """Two stores on the same file, as two processes would have."""
    first, second = SQLiteStore(db), SQLiteStore(db)
    await first.setup()
    await second.setup()  # idempotent on an existing file
    try:
        yield first, second
    finally:
        await first.close()
        await second.close()


def _raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, autocommit=True)


async def test_database_is_in_wal_mode(pair: tuple[SQLiteStore, SQLiteStore], db: Path) -> None:
    with closing(_raw(db)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_two_stores_record_concurrently_without_losing_a_message(
    pair: tuple[SQLiteStore, SQLiteStore],
) -> None:
    first, second = pair

    async def put(store: SQLiteStore, message_id: str) -> int:
        outcome = await store.record_messages(
            "s1", "a1", [msg(message_id)], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
            now=at(0),
        )  # fmt: skip
        return outcome.inserted

    calls = [put(first, f"m{i}") for i in range(15)] + [put(second, f"m{i}") for i in range(5, 20)]
    inserted = await asyncio.gather(*calls)

    assert sum(inserted) == 20  # m5..m14 were sent by both: stored once
    stored = await first.load_messages("s1", 0, 100)
    assert [m.seq for m in stored] == list(range(1, 21))
    assert sorted(m.message_id for m in stored) == sorted(f"m{i}" for i in range(20))
    state = await second.get_session_agent_state("s1", "a1")
    assert state is not None
    assert (state.last_seq, state.pending_messages) == (20, 20)


async def test_a_store_sees_fact_writes_of_another_store(
    pair: tuple[SQLiteStore, SQLiteStore],
) -> None:
    writer, reader = pair
    former = await Former(writer).start()
    await former.form(add("f1", "Likes figs", unit(1, 0)), add("f2", "Likes plums", unit(0, 1)))
    before = await reader.vector_search(vec(1, 0), user_filter(), limit=10)

    await former.form(
        add("f3", "Likes dates", unit(1, 0.1)),
        FactInvalidate(fact_id="f1", expected_version=1, replaced_by="f3"),
    )
    after = await reader.vector_search(vec(1, 0), user_filter(), limit=10)

    assert [h.fact.fact_id for h in before] == ["f1", "f2"]
    assert [h.fact.fact_id for h in after] == ["f3", "f2"]


async def test_a_store_in_another_process_writes_safely(
    pair: tuple[SQLiteStore, SQLiteStore], db: Path
) -> None:
    store, _ = pair
    script = textwrap.dedent(
        f"""
        import asyncio
        from memory.store.sqlite import SQLiteStore
        from tests.store.builders import CHARS_PER_TOKEN, WEIGHTS, at, msg

        async def main() -> None:
            store = SQLiteStore({str(db)!r})
            await store.setup()
            for i in range(20):
                await store.record_messages(
                    "s1", "a2", [msg(f"child-{{i}}")], weights=WEIGHTS,
                    chars_per_token=CHARS_PER_TOKEN, now=at(0),
                )
            await store.close()

        asyncio.run(main())
        """
    )
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, cwd=Path(__file__).parents[2], stderr=subprocess.PIPE
    )
    for i in range(20):
        await store.record_messages(
            "s1", "a1", [msg(f"parent-{i}")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
            now=at(0),
        )  # fmt: skip
    _, stderr = await child.communicate()

    assert child.returncode == 0, stderr.decode()
    stored = await store.load_messages("s1", 0, 100)
    assert [m.seq for m in stored] == list(range(1, 41))
    for agent_id in ("a1", "a2"):
        state = await store.get_session_agent_state("s1", agent_id)
        # Every message after the agent joined is pending (a2 joined at the head of its time).
        assert state is not None and state.last_seq == 40
        assert state.cursor_seq + state.pending_messages == 40


async def test_a_store_waiting_for_the_write_lock_leaves_the_loop_free(
    pair: tuple[SQLiteStore, SQLiteStore], db: Path
) -> None:
    blocked, other = pair
    await blocked.record_messages(
        "s1", "a1", [msg("m1")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN, now=at(0)
    )
    holder = _raw(db)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        write = asyncio.create_task(
            blocked.record_messages(
                "s1", "a1", [msg("m2")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
                now=at(0),
            )
        )  # fmt: skip
        # While that write waits for the lock, the loop serves other work: a WAL read completes.
        session = await other.get_session("s1")
        assert session is not None
        assert not write.done()
    finally:
        holder.execute("COMMIT")
        holder.close()

    outcome = await write
    assert (outcome.inserted, outcome.state.last_seq) == (1, 2)


async def test_cold_sessions_query_is_an_index_range_scan(
    pair: tuple[SQLiteStore, SQLiteStore], db: Path
) -> None:
    params = {
        "idle_before": 0, "min_messages": 1, "min_tokens": 0.0, "rest_before": 0, "after_at": 0,
        "after_session": "", "after_agent": "", "limit": 10,
    }  # fmt: skip
    with closing(_raw(db)) as conn:
        plan = [
            row[3]
            for row in conn.execute("EXPLAIN QUERY PLAN " + sqlite_sql(COLD_SESSIONS_SQL), params)
        ]

    assert any("SEARCH sa USING INDEX session_agents_cold" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step or step.startswith("SCAN") for step in plan), plan


async def test_vector_cache_stays_right_through_many_invalidations(
    pair: tuple[SQLiteStore, SQLiteStore],
) -> None:
    # Enough invalidated rows that the cached matrix compacts itself (over 1,024 dead rows).
    store, _ = pair
    former = await Former(store).start()
    angles = [i * math.pi / 2 / 1500 for i in range(1500)]
    await former.form(
        *(add(f"f{i}", f"Fact {i}", [math.cos(a), math.sin(a), 0, 0]) for i, a in enumerate(angles))
    )
    first = await store.vector_search(vec(1), user_filter(), limit=2)  # loads the cache
    assert [h.fact.fact_id for h in first] == ["f0", "f1"]

    await former.form(
        add("fresh", "A fresh fact", unit(0, 0, 1)),
        *(
            FactInvalidate(fact_id=f"f{i}", expected_version=1, replaced_by="fresh")
            for i in range(1100)
        ),
    )
    await former.form(add("later", "A later fact", unit(1, 0.0001)))

    best = await store.vector_search(vec(1), user_filter(), limit=3)
    assert [h.fact.fact_id for h in best] == ["later", "f1100", "f1101"]
    [fresh] = await store.vector_search(vec(0, 0, 1), user_filter(), limit=1)
    assert fresh.fact.fact_id == "fresh"
    everything = await store.vector_search(vec(1), user_filter(), limit=5000)
    assert len(everything) == 1500 - 1100 + 2
