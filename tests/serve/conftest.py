"""An app over the formation test bench (SQLite store, Temporal test server, scripted LLM), keys in
that store (the default of ``mnemos serve``), and an HTTP client that talks to it in-process
(httpx's ASGI transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from temporalio.testing import WorkflowEnvironment

from client.memory_client import MemoryClient
from memory.models import AgentConfig, FactFilter, MessageIn
from serve.app import create_app
from serve.keys import ApiKeyStore, StoreKeyStore
from tests.harness import T0, Harness, conversation, facts, reflections


@dataclass
class Served:
    h: Harness
    memory: MemoryClient
    keys: ApiKeyStore
    app: FastAPI
    eve: str  # read-write key for agent eve
    eve_ro: str  # read-only key for eve
    bob: str  # read-write key for agent bob only
    eve_erase: str  # read-write key for eve that may also erase users

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
    _, eve_erase = await keys.create(["eve"], name="eve-erase", can_erase=True)
    memory = h.memory
    app = create_app(memory, keys, temporal_ui_url="http://ui.test")
    try:
        yield Served(h, memory, keys, app, eve, eve_ro, bob, eve_erase)
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


async def form_shared(h: Harness, session: str = "g1") -> str:
    """A session eve and bob share: alice talks to eve, bob's backend records its own turn, and
    eve forms a fact from bob's message and a session reflection. The fact's id."""
    await h.record(session, [message("m1", "hello eve, what's on today", user_id="alice")], "eve")
    await h.record(session, [message("m2", "BOB-RECORD: the merger closes on Friday")], "bob")
    h.llm.script("extract_facts", facts(("The merger closes on Friday", "agent"), sources=[2]))
    h.llm.script("extract_reflections", reflections(session=["G1-SESSION-MEMORY merger talk"]))
    async with h.worker():
        await h.form(session)
    return (await h.store.list_facts(FactFilter(agent_id="eve"), limit=10))[0].fact_id


def message(message_id: str, content: str, user_id: str | None = None) -> MessageIn:
    minutes = int(message_id.removeprefix("m"))
    role = "user" if user_id else "agent"
    return MessageIn(
        message_id=message_id,
        role=role,
        user_id=user_id,
        content=content,
        created_at=T0 + timedelta(minutes=minutes),
    )
