"""Fixtures of the retrieval tests: ``store`` runs a test on both backends, ``sqlite_store`` on
SQLite only (for behaviour that does not depend on the backend)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.store.sqlite import SQLiteStore
from tests.store.conftest import backend, mongo_uri, store

__all__ = ["backend", "mongo_uri", "sqlite_store", "store"]


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    backend = SQLiteStore(tmp_path / "mnemos.db")
    await backend.setup()
    try:
        yield backend
    finally:
        await backend.close()
