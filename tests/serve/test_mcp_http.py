"""MCP over streamable HTTP at /mcp of a live server (uvicorn on a free port), through the official
SDK's HTTP client: the same API keys bound what the tools see and do."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent
from temporalio.service import RPCError, RPCStatusCode

import client.formation_triggers as formation_triggers
from tests.harness import T0, facts
from tests.serve.conftest import Served, form_alice


@asynccontextmanager
async def live(served: Served) -> AsyncIterator[str]:
    """The app served by uvicorn (its lifespan runs the MCP session manager) on a free port. The
    socket listens before uvicorn starts: a request waits in its backlog until the app is up."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(served.app, log_config=None))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


@asynccontextmanager
async def mcp_session(base: str, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text(result: CallToolResult) -> str:
    assert isinstance(result.content[0], TextContent)
    return result.content[0].text


def data(result: CallToolResult) -> Any:
    assert not result.is_error, text(result)
    return result.structured_content or json.loads(text(result))


async def test_memory_tools_over_http_behind_the_api_keys(served: Served) -> None:
    await form_alice(served.h)
    async with live(served) as base:
        async with httpx.AsyncClient() as plain:
            r = await plain.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 401 and r.headers["content-type"] == "application/problem+json"

        async with mcp_session(base, served.eve) as mcp:
            tools = {t.name for t in (await mcp.list_tools()).tools}
            assert tools == {"remember", "search", "context", "forget"}
            found = await mcp.call_tool(
                "search",
                {
                    "agent_id": "eve",
                    "query": ["Alice drinks green tea every morning"],
                    "user_id": "alice",
                    "session_id": "s1",
                },
            )
            assert "Alice drinks green tea every morning" in text(found)
            xml = text(await mcp.call_tool("context", {"agent_id": "eve", "session_id": "s1"}))
            assert xml.startswith("<MemoryContext") and "green tea" not in xml  # no user given
            other = await mcp.call_tool("search", {"agent_id": "bob", "query": ["tea"]})
            assert other.is_error and "not for agent 'bob'" in text(other)

            served.h.llm.script("extract_facts", facts(("Alice is vegetarian", "user")))
            async with served.h.worker():
                noted = data(
                    await mcp.call_tool(
                        "remember",
                        {
                            "agent_id": "eve",
                            "session_id": "s2",
                            "note": "I am vegetarian",
                            "user_id": "alice",
                        },
                    )
                )
                assert noted["inserted"] == 1 and noted["formation_started"]
                await served.h.client.get_workflow_handle(noted["workflow_id"]).result()
            found = await mcp.call_tool(
                "search",
                {
                    "agent_id": "eve",
                    "query": ["Alice is vegetarian"],
                    "user_id": "alice",
                    "session_id": "s2",
                },
            )
            assert "Alice is vegetarian" in text(found)

            fact_id = next(
                f.fact_id for f in await served.h.all_facts() if f.content == "Alice is vegetarian"
            )
            gone = data(await mcp.call_tool("forget", {"agent_id": "eve", "fact_id": fact_id}))
            assert gone == {"fact_id": fact_id, "deleted": True}
            refused = await mcp.call_tool("forget", {"agent_id": "eve", "user_id": "alice"})
            assert refused.is_error and "may not erase" in text(refused)

        async with mcp_session(base, served.eve_ro) as mcp:
            ro = await mcp.call_tool(
                "remember", {"agent_id": "eve", "session_id": "s3", "note": "x"}
            )
            assert ro.is_error and "read-only" in text(ro)

        async with mcp_session(base, served.eve_erase) as mcp:
            erased = data(await mcp.call_tool("forget", {"agent_id": "eve", "user_id": "alice"}))
            assert erased["agents"][0]["facts"] >= 1
    left = await served.h.all_facts()
    assert all(f.user_id != "alice" for f in left)


async def test_the_tools_of_a_key_for_bob_cannot_reach_eves_session(served: Served) -> None:
    await form_alice(served.h)
    before = await served.h.store.load_messages("s1", 0, 100)
    async with live(served) as base, mcp_session(base, served.bob) as mcp:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("remember", {"note": "I moved to Oslo", "user_id": "alice"}),
            ("context", {}),
            ("search", {"query": ["tea"]}),
        ]
        for tool, args in calls:
            refused = await mcp.call_tool(tool, {"agent_id": "bob", "session_id": "s1", **args})
            assert refused.is_error and "session 's1' has no recorded messages" in text(refused), (
                tool
            )
        # An empty remember wrote an empty session, the agent joined to it: refused too.
        empty = await mcp.call_tool(
            "remember", {"agent_id": "bob", "session_id": "ghost", "messages": []}
        )
        assert empty.is_error and "at least one" in text(empty)
    assert await served.h.store.load_messages("s1", 0, 100) == before
    assert await served.h.store.get_session("ghost") is None
    session = await served.h.store.get_session("s1")
    assert session is not None and session.agent_ids == ("eve",)


@pytest.mark.parametrize("accept", ["application/json", "application/json, text/event-stream"])
async def test_plain_json_answers_whatever_the_client_accepts(served: Served, accept: str) -> None:
    async with live(served) as base, httpx.AsyncClient() as plain:
        r = await plain.post(
            f"{base}/mcp",
            headers={"Authorization": f"Bearer {served.eve}", "Accept": accept},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "curl", "version": "0"},
                },
            },
        )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["result"]["serverInfo"]["name"] == "mnemos"


async def test_mcp_answers_are_kept_by_no_cache(served: Served) -> None:
    """A tool's answer is one key's view of memory: a shared cache must neither keep it nor give
    it to a caller with another key (or none), nor the refusal of a caller without one."""
    hello = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "curl", "version": "0"}},
    }  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    async with live(served) as base, httpx.AsyncClient() as plain:
        keyed = {**accept, "Authorization": f"Bearer {served.eve}"}
        answers = [
            await plain.post(f"{base}/mcp", headers=keyed, json=hello),
            await plain.post(f"{base}/mcp", headers=accept, json=hello),  # no key: 401
        ]
    assert [r.status_code for r in answers] == [200, 401]
    for r in answers:
        assert r.headers.get("cache-control") == "no-store", r.status_code
        assert r.headers.get("vary") == "Authorization, X-API-Key", r.status_code


async def test_context_and_search_at_the_start_of_a_conversation(served: Served) -> None:
    """As the server's instructions ask: context first, in a session nothing was recorded in
    yet; it answers what POST …/start answers, and the turn's search works there too."""
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/brand-new/start", json={"user_id": "alice"})
    started = r.json()["context"]
    args = {"agent_id": "eve", "session_id": "brand-new", "user_id": "alice"}
    async with live(served) as base, mcp_session(base, served.eve) as mcp:
        context = await mcp.call_tool("context", args)
        found = await mcp.call_tool(
            "search", {**args, "query": ["Alice drinks green tea every morning"]}
        )
    assert not context.is_error, text(context)
    assert text(context) == started and "green tea" in started
    assert not found.is_error and "Alice drinks green tea every morning" in text(found)


async def test_remember_gives_user_id_to_the_user_messages_without_one(served: Served) -> None:
    """user_id is the user the messages come from: without it alice's words were a guest's, the
    session a group chat, where user memory is off for every agent."""
    at = T0.isoformat()
    said = {"message_id": "u1", "role": "user", "content": "I am allergic to peanuts"}
    answer = {"message_id": "a1", "role": "agent", "content": "Noted.", "created_at": at}
    call = {"agent_id": "eve", "user_id": "alice", "messages": [{**said, "created_at": at}]}
    carols = [{**said, "created_at": at, "user_id": "carol"}]
    async with live(served) as base, mcp_session(base, served.eve) as mcp:
        data(await mcp.call_tool("remember", {**call, "session_id": "mcp1"}))
        data(await mcp.call_tool("remember", {**call, "session_id": "mcp1", "messages": [answer]}))
        # A message that names its speaker keeps it.
        data(await mcp.call_tool("remember", {**call, "session_id": "mcp2", "messages": carols}))
        bad = await mcp.call_tool("remember", {**call, "session_id": "mcp3", "user_id": "bad id!"})
    assert bad.is_error and "user_id" in text(bad)
    stored = await served.h.store.load_messages("mcp1", 0, 10)
    assert [(m.message_id, m.user_id) for m in stored] == [("u1", "alice"), ("a1", None)]
    session = await served.h.store.get_session("mcp1")
    assert session is not None and session.user_ids == ("alice",) and not session.has_guests
    [carol] = await served.h.store.load_messages("mcp2", 0, 10)
    assert carol.user_id == "carol"
    assert await served.h.store.get_session("mcp3") is None


async def _unreachable(*_: object, **__: object) -> None:
    raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")


async def test_a_note_while_temporal_is_down_is_deferred_and_its_retry_forms_it(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As remember with messages (and the HTTP record route): the note is stored and its
    formation deferred, not an opaque tool error. Before, the call failed with "Error executing
    tool remember" though the note was stored, and its retry answered formation_started false:
    no formation was asked for until the cold-sessions job came by."""
    note = {"agent_id": "eve", "session_id": "n1", "note": "I am allergic to nuts", "user_id": "a"}
    async with live(served) as base, mcp_session(base, served.eve) as mcp:
        with monkeypatch.context() as m:
            m.setattr(formation_triggers, "start_formation", _unreachable)
            first = data(await mcp.call_tool("remember", note))
        again = data(await mcp.call_tool("remember", note))
    assert first == {
        "inserted": 1,
        "duplicates": 0,
        "formation_started": False,
        "formation_deferred": True,
        "workflow_id": None,
    }
    assert again == {
        "inserted": 0,
        "duplicates": 1,
        "formation_started": True,
        "formation_deferred": False,
        "workflow_id": "form:eve:n1",
    }


async def test_invalid_search_input_is_an_error_result(served: Served) -> None:
    """isError true with the reason, as the other tools answer invalid input: before, search
    answered "search_facts error: …" as a successful result."""
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"query": []}, "at least 1 item"),
        ({"query": ["tea"], "top_k": 26}, "top_k must be between 1 and 25"),
        ({"query": ["tea"], "user_id": "bad id!"}, "user_id"),
    ]
    async with live(served) as base, mcp_session(base, served.eve) as mcp:
        for args, says in refusals:
            refused = await mcp.call_tool("search", {"agent_id": "eve", **args})
            assert refused.is_error and says in text(refused), args
