"""The ``store`` fixture: every contract test runs once per backend.

- sqlite: a fresh database file per test.
- mongo: a fresh database per test on one MongoDB server for the session: the real server named by
  MONGODB_URI when set, else mongoeco's wire server started in this process (real pymongo over
  loopback). mongoeco is slow: keep fixtures small.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.store.base import MemoryStore


@pytest.fixture(scope="session")
async def mongo_uri() -> AsyncIterator[str]:
    from tests.mongo_server import running_mongo

    async with running_mongo() as uri:
        yield uri


@pytest.fixture(params=["sqlite", pytest.param("mongo", marks=pytest.mark.mongo)])
def backend(request: pytest.FixtureRequest) -> tuple[str, str | None]:
    # Sync on purpose: an async fixture cannot getfixturevalue() another async fixture.
    if request.param == "mongo":
        return "mongo", request.getfixturevalue("mongo_uri")
    return "sqlite", None


@pytest.fixture
async def store(backend: tuple[str, str | None], tmp_path: Path) -> AsyncIterator[MemoryStore]:
    name, uri = backend
    opened: MemoryStore
    if name == "sqlite":
        from memory.store.sqlite import SQLiteStore

        opened = SQLiteStore(tmp_path / "mnemos.db")
    else:
        from memory.store.mongo import MongoStore

        assert uri is not None
        opened = MongoStore.from_uri(
            uri, database=f"t_{uuid.uuid4().hex[:12]}", atlas_search="auto"
        )
    await opened.setup()
    try:
        yield opened
    finally:
        await opened.close()
