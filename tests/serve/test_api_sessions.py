"""Agents and sessions through HTTP: register, configure, record (202 + the formation's workflow
id), form now, start and end a session, the memory context as XML and JSON, and validation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

import client.memory_client as memory_client
from memory.models import AgentConfig, MessageIn
from tests.harness import conversation, facts
from tests.serve.conftest import Served, form_alice
from workflows.summary import FormationSummary


def as_json(messages: list[MessageIn]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


async def test_register_get_and_update_an_agent(served: Served) -> None:
    _, token = await served.keys.create(["carol"])
    async with served.client(token) as c:
        assert (await c.get("/v1/agents/carol")).status_code == 404
        r = await c.post("/v1/agents", json={"agent_id": "carol", "name": "Carol"})
        assert r.status_code == 201 and r.json()["name"] == "Carol"
        r = await c.patch("/v1/agents/carol", json={"persona": "A librarian", "tier": 1})
        assert r.status_code == 200
        got = (await c.get("/v1/agents/carol")).json()
        assert got["persona"] == "A librarian" and got["tier"] == 1 and got["name"] == "Carol"
        r = await c.patch("/v1/agents/carol", json={"tier": 99})
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "tier"]
        r = await c.patch("/v1/agents/carol", json={"name": None})  # the schema admits no null
        assert r.status_code == 422
        r = await c.patch("/v1/agents/carol", json={"user_memory_enabled": 0})  # no boolean
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == [
            "body",
            "user_memory_enabled",
        ]


async def test_two_patches_of_one_agent_at_once_both_hold(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operator turns user memory off while someone edits the persona: both get 200, so both
    changes hold. Forced: every read of the agent waits until both requests have read it (what
    two replicas do), so a PATCH that merged outside the store's write would lose one."""
    store = served.h.store
    real_get = store.get_agent
    readers: list[str] = []
    both_read = asyncio.Event()

    async def get_agent(agent_id: str) -> AgentConfig | None:
        got = await real_get(agent_id)
        readers.append(agent_id)
        if len(readers) == 2:
            both_read.set()
        await asyncio.wait_for(both_read.wait(), 5)
        return got

    async with served.client(served.eve) as c:
        monkeypatch.setattr(store, "get_agent", get_agent)
        off, persona = await asyncio.gather(
            c.patch("/v1/agents/eve", json={"user_memory_enabled": False}),
            c.patch("/v1/agents/eve", json={"persona": "A careful producer"}),
        )
        monkeypatch.setattr(store, "get_agent", real_get)
        assert off.status_code == persona.status_code == 200
        got = (await c.get("/v1/agents/eve")).json()
    assert (got["user_memory_enabled"], got["persona"]) == (False, "A careful producer")
    assert got["name"] == "Eve"  # a field neither sent keeps its value
    assert off.json()["user_memory_enabled"] is False
    assert persona.json()["persona"] == "A careful producer"


async def test_validation_names_the_field_and_never_shows_a_trace(served: Served) -> None:
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/s1/messages", json={"messages": [{"role": "x"}]})
        assert r.status_code == 422
        assert r.headers["content-type"] == "application/problem+json"
        locs = {tuple(e["loc"]) for e in r.json()["errors"]}
        assert ("body", "messages", 0, "role") in locs
        assert ("body", "messages", 0, "message_id") in locs
        assert "Traceback" not in r.text
        naive = conversation(1)[0].model_dump(mode="json")
        naive["created_at"] = "2026-11-01T09:00:00"
        r = await c.post("/v1/agents/eve/sessions/s1/messages", json={"messages": [naive]})
        assert r.status_code == 422
        assert r.json()["errors"][0]["loc"][-1] == "created_at"
        r = await c.get("/v1/agents/eve/sessions/bad%20id/context")
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "session_id"]
        r = await c.get("/v1/agents/eve/sessions/nope/context")
        assert r.status_code == 404 and "nope" in r.json()["detail"]


async def test_recording_below_the_thresholds_starts_nothing(served: Served) -> None:
    async with served.client(served.eve) as c:
        r = await c.post(
            "/v1/agents/eve/sessions/s1/messages", json={"messages": as_json(conversation(3))}
        )
        assert r.status_code == 202
        body = r.json()
        assert body["recorded"]["inserted"] == 3
        assert body["formation"]["started"] is False and body["formation"]["workflow_id"] is None
        again = await c.post(
            "/v1/agents/eve/sessions/s1/messages", json={"messages": as_json(conversation(3))}
        )
        assert again.json()["recorded"]["duplicates"] == 3


async def test_recording_past_the_threshold_returns_the_formation_workflow(served: Served) -> None:
    h = served.h
    messages = as_json(conversation(h.settings.formation.message_interval + 1))
    async with h.worker(), served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/s2/messages", json={"messages": messages})
        assert r.status_code == 202
        formation = r.json()["formation"]
        assert formation["started"] is True and formation["workflow_id"] == "form:eve:s2"
        handle = h.client.get_workflow_handle(
            formation["workflow_id"], result_type=FormationSummary
        )
        summary = await asyncio.wait_for(handle.result(), 60)
    assert summary.messages_formed == len(messages)


async def test_form_now_and_wait_or_not(served: Served) -> None:
    h = served.h
    await h.record("s1", conversation(2))
    h.llm.script("extract_facts", facts(("Alice swims", "user")))
    async with h.worker(), served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/s1/form", params={"wait": "true"})
        assert r.status_code == 200 and r.json()["facts_added"] == 1
        await h.record("s1", conversation(2, start=2))
        r = await c.post("/v1/agents/eve/sessions/s1/form")
        assert r.status_code == 202 and r.json() == {"workflow_id": "form:eve:s1"}
        handle = h.client.get_workflow_handle("form:eve:s1", result_type=FormationSummary)
        assert (await asyncio.wait_for(handle.result(), 60)).messages_formed == 2
        r = await c.post("/v1/agents/eve/sessions/never/form")
        assert r.status_code == 404


async def test_context_as_xml_and_as_json(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        r = await c.get("/v1/agents/eve/sessions/s1/context", params={"user_id": "alice"})
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/xml")
        assert r.text.startswith("<MemoryContext") and "green tea" in r.text
        j = await c.get(
            "/v1/agents/eve/sessions/s1/context",
            params={"user_id": "alice"},
            headers={"accept": "application/json"},
        )
        assert j.json() == {
            "agent_id": "eve",
            "session_id": "s1",
            "user_id": "alice",
            "context": r.text,
        }
        f = await c.get("/v1/agents/eve/sessions/s1/context", params={"format": "json"})
        assert "Eve answers in French" in f.json()["context"]
        assert "green tea" not in f.json()["context"]  # no user given: no user facts


async def test_session_start_returns_context_and_end_forms_and_consolidates(
    served: Served,
) -> None:
    h = served.h
    await form_alice(h)
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/new-s/start", json={"user_id": "alice"})
        assert r.status_code == 200 and "green tea" in r.json()["context"]
        assert (
            await c.post("/v1/agents/eve/sessions/new-s/start", json={"x": 1})
        ).status_code == 422
        await h.record("s1", conversation(2, start=4))
        async with h.worker():
            r = await c.post("/v1/agents/eve/sessions/s1/end")
        assert r.status_code == 200
        end = r.json()
        assert end["formation"]["messages_formed"] == 2
        assert end["consolidation"]
        blob = await c.get("/v1/agents/eve/scopes/session:s1/consolidated")
        assert blob.status_code == 200 and "about tea" in blob.json()["content"]


async def test_the_first_turn_searches_before_anything_is_recorded(served: Served) -> None:
    """A backend records a turn after its answer: the first turn's search names a session with
    no message yet, and finds what its session start shows."""
    await form_alice(served.h)
    tea = "Alice drinks green tea every morning"
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/session-42/start", json={"user_id": "alice"})
        assert r.status_code == 200 and tea in r.json()["context"]
        body = {"queries": [tea], "user_id": "alice", "session_id": "session-42"}
        r = await c.post("/v1/agents/eve/search", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["hits"][0]["content"] == tea
        r = await c.post("/v1/agents/eve/search", json={**body, "user_id": "bob"})
        assert r.status_code == 200 and all(h["scope"] == "agent" for h in r.json()["hits"])


async def test_an_end_refused_while_temporal_is_down_is_ended_by_asking_again(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store marks the end before Temporal is asked: the 503 leaves the session ended, its
    rest unformed, and the same request later starts the end, which forms that rest."""
    h = served.h
    await h.record("s1", conversation(2))

    async def unreachable(*_: object, **__: object) -> None:
        raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")

    monkeypatch.setattr(memory_client, "start_session_end", unreachable)
    h.llm.script("extract_facts", facts(("Alice swims", "user")))
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/sessions/s1/end")
        assert r.status_code == 503 and "POST" in r.json()["detail"]
        session = await h.store.get_session("s1", "eve")
        assert session is not None and session.ended_at is not None
        monkeypatch.undo()  # Temporal is back
        async with h.worker():
            r = await c.post("/v1/agents/eve/sessions/s1/end")
    assert r.status_code == 200, r.text
    assert r.json()["formation"]["messages_formed"] == 2


async def test_an_end_whose_session_a_forget_erased_before_it_ran_is_a_404(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The end is started, and before a worker takes it the session's only user is forgotten
    (the session goes whole): the end's answer says the session is gone, not a 500."""
    h = served.h
    await h.record("s1", conversation(4))
    started = served.memory.end_session

    async def end_then_forget(agent_id: str, session_id: str) -> Any:
        handle = await started(agent_id, session_id)
        await served.memory.forget_user("eve", "alice")  # while no worker has taken the end
        return handle

    monkeypatch.setattr(served.memory, "end_session", end_then_forget)
    async with served.client(served.eve) as c, h.worker():
        r = await c.post("/v1/agents/eve/sessions/s1/end")
    assert r.status_code == 404, r.text
    assert r.json()["detail"] == (
        "session 's1' of agent 'eve' is gone: erased (a forget) before its end ran"
    )
