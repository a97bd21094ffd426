"""A store that cannot be reached says so as StoreUnavailableError ("retry later": the API's 503,
a step Temporal retries), whatever its backend, its driver's text kept as the cause for the logs;
not the driver's own error, which the API took for a bug (a 500). The PostgreSQL case, a real
server stopped under a serving app, is tests/serve/test_api_store_down.py."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import time
from pathlib import Path

import pytest
from pymongo.errors import ServerSelectionTimeoutError

from memory.errors import StoreUnavailableError
from memory.store.mongo import MongoStore
from memory.store.sqlite import SQLiteStore
from tests.store.builders import at


def _closed_port() -> int:
    """A loopback port nothing listens on: a server that is down."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_sqlite_file_that_cannot_be_opened_is_the_store_unavailable(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path)  # a directory where the database file should be
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            await store.get_agent("eve")
    finally:
        await store.close()
    assert str(caught.value) == "the memory store cannot be reached; retry later"
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)  # for the logs


async def test_a_sqlite_error_of_the_request_itself_stays_what_it_is(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    try:
        with pytest.raises(sqlite3.OperationalError):  # a bug, not an outage: no "retry later"
            await store._read(lambda conn: conn.execute("SELECT * FROM no_such_table"))
    finally:
        await store.close()


@pytest.mark.mongo
async def test_a_mongodb_server_that_is_down_is_the_store_unavailable_within_its_timeout() -> None:
    uri = f"mongodb://127.0.0.1:{_closed_port()}/?directConnection=true"
    store = MongoStore.from_uri(uri, database="mnemos", connect_timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError) as caught:
            await store.get_agent("eve")
        took = time.monotonic() - started
    finally:
        await store.close()
    assert isinstance(caught.value.__cause__, ServerSelectionTimeoutError)
    assert took < 5, f"waited {took:.1f} s for a server to select, not connect_timeout's 0.3 s"
    assert str(caught.value) == "the memory store cannot be reached; retry later"


@pytest.mark.mongo
async def test_a_mongodb_write_while_the_server_is_down_is_the_store_unavailable_promptly() -> None:
    # A write runs in a transaction, where pymongo labels the failure a transient one to retry.
    uri = f"mongodb://127.0.0.1:{_closed_port()}/?directConnection=true"
    store = MongoStore.from_uri(uri, database="mnemos", connect_timeout=0.3)
    try:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError) as caught:
            await asyncio.wait_for(
                store.invalidate_fact("f1", at=at(1), reason="user asked to delete it"), 15
            )
        took = time.monotonic() - started
    finally:
        await store.close()
    assert isinstance(caught.value.__cause__, ServerSelectionTimeoutError)
    assert took < 5, f"waited {took:.1f} s: the outage was retried as a write conflict"
