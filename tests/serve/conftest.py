"""An app over the formation test bench (SQLite store, Temporal test server, scripted LLM), keys in
that store (the default of ``mnemos serve``), and an HTTP client that talks to it in-process
(httpx's ASGI transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from temporalio.testing import WorkflowEnvironment

from client.memory_client import MemoryClient
from memory.models import AgentConfig
from serve.app import create_app
from serve.keys import ApiKeyStore, StoreKeyStore
from tests.harness import Harness, conversation, facts, reflections


@dataclass
class Served:
    h: Harness
    memory: MemoryClient
    keys: ApiKeyStore
    app: FastAPI
    eve: str  # read-write key for agent eve
    eve_ro: str  # read-only key for eve
    bob: str  # read-write key for agent bob only

    def client(self, token: str | None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://test", headers=headers
        )


@pytest.fixture
async def served(time_env: WorkflowEnvironment, tmp_path: Path) -> AsyncIterator[Served]:
    h = await Harness.create(time_env, tmp_path)
    await h.store.upsert_agent(AgentConfig(agent_id="bob", name="Bob"))
    keys = StoreKeyStore(h.store)
    _, eve = await keys.create(["eve"], name="eve")
    _, eve_ro = await keys.create(["eve"], read_only=True, name="eve-ro")
    _, bob = await keys.create(["bob"], name="bob")
    memory = h.memory
    app = create_app(memory, keys, temporal_ui_url="http://ui.test")
    try:
        yield Served(h, memory, keys, app, eve, eve_ro, bob)
    finally:
        await h.store.close()


async def form_alice(h: Harness, session: str = "s1") -> None:
    """One formation of a short conversation with alice: two facts and three reflections."""
    h.llm.script(
        "extract_facts",
        facts(
            ("Alice drinks green tea every morning", "user"),
            ("Eve answers in French", "agent"),
            sources=[1, 3],
        ),
    )
    h.llm.script(
        "extract_reflections",
        reflections(
            agent=["Users like short answers"],
            user=["Alice is a morning person"],
            session=["The session was about tea"],
        ),
    )
    await h.record(session, conversation(4))
    async with h.worker():
        await h.form(session)
