"""The store of the re-form tests: SQLite, agent eve registered (the re-form reaches the store
only through the contract, tested on every backend in tests/store)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.models import AgentConfig
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    opened = SQLiteStore(tmp_path / "mnemos.db")
    await opened.setup()
    await opened.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    yield opened
    await opened.close()
