"""The scope rule holds whatever the model answers: through the real OpenAI and Gemini SDKs against
the local fake server, a model that puts items in a forbidden scope gets them filtered, never
stored (a personal reflection is kept in the session, never promoted), and an item it puts in
agent memory that names the window's user is that user's, one that tells a third party's private
detail its speaker's."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from memory.llm.base import LLMProvider
from memory.llm.gemini_provider import GeminiProvider
from memory.llm.openai_provider import OpenAIProvider
from memory.models import AgentConfig, FactFilter, ScopeKey
from memory.store.sqlite import SQLiteStore
from tests.fake_provider_server import FakeProviderServer, Reply, gemini_content, openai_chat
from tests.isolation.bench import Bench

# Agent memory off, and alice's own session: agent scope is forbidden, and user memory may only
# be alice's. The model answers with items in both forbidden places.
EVE = AgentConfig(agent_id="eve", name="Eve", agent_memory_enabled=False)
FACTS = {
    "facts": [
        {"content": "Bob's email is bob@example.com", "scope": "user", "speaker": "bob"},
        {"content": "Alice is getting divorced", "scope": "agent", "speaker": None},
    ]
}
REFLECTIONS = {
    "agent_reflections": [{"content": "Users here discuss divorces", "speaker": None}],
    "user_reflections": [{"content": "Bob wants answers in French", "speaker": "bob"}],
    "session_reflections": [{"content": "Planning the festival", "speaker": None}],
}


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def openai(server: FakeProviderServer) -> tuple[LLMProvider, list[Reply]]:
    llm = OpenAIProvider(api_key="sk-test", base_url=server.openai_base_url, timeout=10)
    return llm, [openai_chat(json.dumps(FACTS)), openai_chat(json.dumps(REFLECTIONS))]


def gemini(server: FakeProviderServer) -> tuple[LLMProvider, list[Reply]]:
    llm = GeminiProvider(api_key="g-test", timeout=10, base_url=server.url)
    return llm, [gemini_content(json.dumps(FACTS)), gemini_content(json.dumps(REFLECTIONS))]


@pytest.fixture(params=[openai, gemini], ids=["openai", "gemini"])
async def bench(
    request: pytest.FixtureRequest, server: FakeProviderServer, tmp_path: Path
) -> AsyncIterator[Bench]:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    llm, replies = request.param(server)
    server.script(*replies)
    b = await Bench.create(store, [EVE])
    b.llm = llm
    yield b
    await llm.close()
    await store.close()


async def test_items_in_a_forbidden_scope_are_filtered_not_stored(
    bench: Bench, server: FakeProviderServer
) -> None:
    await bench.say("eve", "s1", "I'm divorcing. Bob's email is bob@example.com.", user_id="alice")
    await bench.say("eve", "s1", "Bob wants French. Let's plan the festival.", user_id="alice")
    await bench.form("s1", "eve")

    prompts = [json.dumps(r.body) for r in server.requests]
    assert len(prompts) == 2  # extract facts, extract reflections: nothing kept to decide on
    assert all("NEVER a person's private details" in p for p in prompts)
    # Bob's email is nobody's memory here; alice's divorce, put in agent memory (off), is hers.
    for user in ("bob", None):
        assert await bench.store.list_facts(FactFilter(agent_id="eve", user_id=user)) == []
    [hers] = await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))
    assert (hers.content, hers.scope, hers.user_id) == (
        "Alice is getting divorced",
        "user",
        "alice",
    )
    for key in (ScopeKey.agent("eve"), ScopeKey.user("eve", "alice"), ScopeKey.user("eve", "bob")):
        assert await bench.store.unabsorbed_reflections(key) == []
    session = await bench.store.unabsorbed_reflections(ScopeKey.session("eve", "s1"))
    assert sorted(r.content for r in session) == [
        "Bob wants answers in French",  # personal, not alice's: kept where it was said
        "Planning the festival",
    ]


@contextlib.asynccontextmanager
async def agent_memory_on(
    server: FakeProviderServer, tmp_path: Path, fact: str, agent_reflection: str
) -> AsyncIterator[Bench]:
    """Eve with agent memory on, formed through the OpenAI SDK by a model that answers one fact
    and one reflection, both classified as the agent's."""
    answers = (
        {"facts": [{"content": fact, "scope": "agent"}]},
        {
            "agent_reflections": [{"content": agent_reflection}],
            "user_reflections": [],
            "session_reflections": [],
        },
    )
    server.script(*[openai_chat(json.dumps(a)) for a in answers])
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    b = await Bench.create(store, [AgentConfig(agent_id="eve", name="Eve")])
    b.llm = OpenAIProvider(api_key="sk-test", base_url=server.openai_base_url, timeout=10)
    try:
        yield b
    finally:
        await b.llm.close()
        await store.close()


@pytest.mark.parametrize(
    ("job", "plan"),
    [
        ("Alice is the CTO of Acme Robotics.", "Alice is planning a festival in Lisbon"),
        # As models often write it: about "the user", or with no subject. It names nobody, yet
        # it is hers (memory/scopes.py about_the_speaker; found by H169).
        (
            "The user is the CTO of Acme Robotics and plans a festival in Lisbon",
            "The user plans a festival in Lisbon",
        ),
        (
            "User works as CTO of Acme Robotics and plans a festival in Lisbon",
            "The user plans a festival in Lisbon",
        ),
        (
            "Works as CTO of Acme Robotics and plans a festival in Lisbon",
            "The user plans a festival in Lisbon",
        ),
    ],
)
async def test_a_users_news_put_in_agent_memory_never_reaches_another_user(
    server: FakeProviderServer, tmp_path: Path, job: str, plan: str
) -> None:
    """The model classifies alice's job and her plans as the agent's, which every user of the
    agent reads (a real 1.5B model did so with "Alice is the CTO of Acme Robotics.",
    tests/realmodel). They are hers: bob's turns never see them, hers do."""
    async with agent_memory_on(server, tmp_path, job, plan) as b:
        await b.say("eve", "s1", "I'm the CTO of Acme Robotics, and I plan a festival in Lisbon.", user_id="alice")  # fmt: skip
        await b.form("s1", "eve")
        await b.say("eve", "s2", "Hello!", user_id="bob")

        bob_sees = await b.seen_by("eve", "s2", "bob", ["CTO", "Acme", "festival", "Lisbon"])
        assert "CTO" not in bob_sees and "Lisbon" not in bob_sees
        assert await b.store.list_facts(FactFilter(agent_id="eve", user_id=None)) == []
        alice_sees = await b.seen_by("eve", "s1", "alice", ["CTO", "festival"])
        assert job in alice_sees and plan in alice_sees


async def test_a_third_partys_private_detail_put_in_agent_memory_stays_with_its_speaker(
    server: FakeProviderServer, tmp_path: Path
) -> None:
    """The model classifies what bob tells of a colleague's pregnancy and her husband as the
    agent's. She is no user here, so no name rule applies; the private details
    (memory/privacy.py) make them bob's: carol's turns never see them, his do."""
    news, husband = "Dana from accounting is pregnant.", "Dana's husband lost his job at the port"
    async with agent_memory_on(server, tmp_path, news, husband) as b:
        await b.say("eve", "s1", "Dana from accounting is pregnant, and her husband lost his job at the port.", user_id="bob")  # fmt: skip
        await b.form("s1", "eve")
        await b.say("eve", "s2", "Hello!", user_id="carol")

        carol_sees = await b.seen_by("eve", "s2", "carol", ["Dana", "pregnant", "husband"])
        assert "pregnant" not in carol_sees and "husband" not in carol_sees
        assert await b.store.list_facts(FactFilter(agent_id="eve", user_id=None)) == []
        bob_sees = await b.seen_by("eve", "s1", "bob", ["Dana pregnant"])
        assert news in bob_sees and husband in bob_sees
