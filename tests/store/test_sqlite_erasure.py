"""SQLite: what forget_user erases leaves no trace in the full-text index (FTS5 without
secure-delete keeps a deleted row's terms in its segments until they are merged)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path

import pytest

from memory.store.sqlite import SQLiteStore
from memory.store.sqlite import store as sqlite_store
from tests.store.builders import Former, add, at, unit, user_filter

SECRET = "Zyxquorp diagnosis from Dr Pennywhistle"


@asynccontextmanager
async def _worker(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    """A worker's store, open while the test runs, holding u1's secret fact and an agent fact."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    try:
        former = await Former(store).start(2)
        await former.form(add("f1", SECRET, unit(1, 0)))
        await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
        yield store
    finally:
        await store.close()


@contextmanager
def _read_held(path: Path) -> Iterator[None]:
    """Another process's read (a page being served), open for the block's duration."""
    with closing(sqlite3.connect(path, autocommit=True)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM facts").fetchone()
        yield
        reader.execute("COMMIT")


def _secret_on_disk(tmp_path: Path) -> bool:
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    return b"Zyxquorp" in files or b"Pennywhistle" in files


def _index_blocks(path: Path) -> bytes:
    """Every segment of the FTS index as stored: terms are in clear in them."""
    with closing(sqlite3.connect(path)) as conn:
        return b"".join(
            row[0] for row in conn.execute("SELECT block FROM facts_fts_data") if row[0]
        )


async def test_forget_leaves_none_of_the_erased_words_in_the_text_index(tmp_path: Path) -> None:
    path = tmp_path / "mnemos.db"
    store = SQLiteStore(path)
    await store.setup()
    try:
        former = await Former(store).start(2)
        await former.form(add("f1", "Zyxquorp diagnosis from Dr Pennywhistle", unit(1, 0)))
        await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
        assert b"zyxquorp" in _index_blocks(path)

        await store.forget_user("u1", agent_id="a1", at=at(500))

        # The index still serves what stays.
        hits = await store.text_search("french", user_filter(), limit=5)
        assert [h.fact.fact_id for h in hits] == ["f2"]
    finally:
        await store.close()
    blocks = _index_blocks(path)
    assert b"french" in blocks
    assert b"zyxquorp" not in blocks and b"pennywhistl" not in blocks  # porter stem


async def test_forget_leaves_none_of_the_erased_words_in_any_file_of_a_running_store(
    tmp_path: Path,
) -> None:
    """As deployed: a worker holds the file open for weeks; `mnemos forget` opens its own store,
    forgets and closes. The write-ahead log kept the erased rows' frames (reused, never zeroed)
    while any connection was open; forget checkpoints and truncates it (found by H168)."""
    async with _worker(tmp_path) as worker:
        cli = SQLiteStore(tmp_path / "mnemos.db")
        await cli.setup()
        await cli.forget_user("u1", agent_id="a1", at=at(500))
        await cli.close()
        assert [f.fact_id for f in await worker.list_facts(user_filter())] == ["f2"]
        assert not _secret_on_disk(tmp_path)


async def test_a_read_open_during_forget_only_defers_the_logs_truncation(tmp_path: Path) -> None:
    """Another process reading when forget checkpoints keeps it from the log's end: the store
    tries again after its next call, once the read is over, and the words go (found by H168).
    The forget waits half a second for it, not the 30 s every write of the store would wait."""
    async with _worker(tmp_path) as store:
        with _read_held(tmp_path / "mnemos.db"):
            await store.forget_user("u1", agent_id="a1", at=at(500))
            held = _secret_on_disk(tmp_path)  # what the open read kept there ...
        await store.get_facts(["f1"])  # the store's next call, after the read
        assert held and not _secret_on_disk(tmp_path)  # ... is gone


async def test_a_cli_forget_beside_a_long_read_is_emptied_by_the_workers_next_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mnemos forget` runs its own store and exits; a read in another process held the log past
    its wait and its close. The worker, which never heard of the forget, empties the shared log
    with its writes (every minute; at once here), and the words go (review H176)."""
    monkeypatch.setattr(sqlite_store, "BUSY_TIMEOUT_SECONDS", 0.05)  # the close's wait, shortened
    async with _worker(tmp_path) as worker:
        cli = SQLiteStore(tmp_path / "mnemos.db")
        await cli.setup()
        with _read_held(tmp_path / "mnemos.db"):  # a long page read
            await cli.forget_user("u1", agent_id="a1", at=at(500))
            await cli.close()
        assert _secret_on_disk(tmp_path)  # what the read kept there ...
        monkeypatch.setattr(sqlite_store, "_WAL_TRUNCATE_EVERY_SECONDS", 0.0)  # a minute on
        await worker.touch_facts(["f2"], at=at(600))
        assert not _secret_on_disk(tmp_path)  # ... is gone
