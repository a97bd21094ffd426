"""A user's data through HTTP: DELETE /v1/agents/{agent}/users/{user}, only with a key that may
erase, and GET …/export, with a key that may read."""

from __future__ import annotations

import httpx
import pytest
from temporalio.service import RPCError, RPCStatusCode

import client.memory_client as memory_client
from memory.lifecycle.export import FactLine, HeaderLine, MessageLine, ReflectionLine, read_export
from memory.models import MessageIn
from tests.harness import T0, conversation
from tests.serve.conftest import Served, form_alice


async def test_a_user_is_forgotten_only_with_an_erase_key_of_the_agent(served: Served) -> None:
    await form_alice(served.h)
    url = "/v1/agents/eve/users/alice"
    async with served.client(served.eve_ro) as c:
        assert (await c.delete(url)).status_code == 403
    async with served.client(served.bob) as c:
        assert (await c.delete(url)).status_code == 403
    async with served.client(None) as c:
        assert (await c.delete(url)).status_code == 401
    async with served.client(served.eve) as c:  # a write key, but not one that may erase
        r = await c.delete(url)
        assert r.status_code == 403 and "--erase" in r.json()["detail"]
    async with served.client(served.eve_erase) as c:
        # Refused or not, nothing was deleted before.
        page = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
        assert page["valid_total"] == 2

        r = await c.delete(url)

        assert r.status_code == 200
        [counts] = r.json()["agents"]
        assert (counts["agent_id"], counts["facts"], counts["blobs"]) == ("eve", 1, 0)
        assert counts["reflections"] == 1 and counts["sessions"] == 1
        params = {"user_id": "alice", "include_invalid": "true"}
        left = (await c.get("/v1/agents/eve/facts", params=params)).json()
        assert [f["content"] for f in left["facts"]] == ["Eve answers in French"]
        assert (await c.delete("/v1/agents/eve/users/not valid")).status_code == 422


async def test_a_users_export_is_what_their_erasure_would_delete(served: Served) -> None:
    """GET …/users/{user}/export: the `mnemos export --user` file, for any key that may read the
    agent; then DELETE erases just that (the agent's own memory is in neither)."""
    await form_alice(served.h)
    url = "/v1/agents/eve/users/alice/export"
    async with served.client(served.bob) as c:
        assert (await c.get(url)).status_code == 403
    async with served.client(served.eve_ro) as c:
        r = await c.get(url, params={"messages": "true"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert 'filename="mnemos-eve-alice.jsonl"' in r.headers["content-disposition"]
    records = list(read_export(r.text.splitlines()))
    header, lines = records[0], records[1:]
    assert isinstance(header, HeaderLine) and (header.agent_id, header.user_id) == ("eve", "alice")
    assert [x.content for x in lines if isinstance(x, FactLine)] == [
        "Alice drinks green tea every morning"
    ]
    kept = sorted(x.content for x in lines if isinstance(x, ReflectionLine))
    # Alice was alone in s1: its session memory is hers to take, as a forget would delete it.
    assert kept == ["Alice is a morning person", "The session was about tea"]
    assert sum(isinstance(x, MessageLine) for x in lines) == 4

    async with served.client(served.eve_erase) as c:
        assert (await c.delete("/v1/agents/eve/users/alice")).status_code == 200
        after = list(read_export((await c.get(url)).text.splitlines()))
    assert not [x for x in after if isinstance(x, FactLine | ReflectionLine | MessageLine)]


async def test_a_users_export_names_no_agent_the_key_is_not_for(served: Served) -> None:
    """README "Keys": a session holding an agent the key is not for is answered as an unknown
    one. The user's export through eve's key lists eve's messages of such a session, but names
    only eve's formation state of it (pending_for, withheld_from): not that bob holds it, has
    not formed it, or had alice forgotten (`mnemos export`, an operator's, names every agent)."""
    memory = served.memory
    await memory.record_messages("bob", "s1", [
        MessageIn(message_id="b1", role="user", user_id="alice", content="Hi Bob", created_at=T0),
    ])  # fmt: skip
    await memory.record_messages("eve", "s1", [
        MessageIn(message_id="e1", role="user", user_id="alice", content="We plan the launch",
                  created_at=T0),
    ])  # fmt: skip
    await memory.forget_user("bob", "alice")  # withholds alice's words in s1 from bob only
    async with served.client(served.eve) as c:
        assert (await c.get("/v1/agents/eve/sessions/s1/context")).status_code == 404
        r = await c.get("/v1/agents/eve/users/alice/export", params={"messages": "true"})

    assert r.status_code == 200
    [message] = [x for x in read_export(r.text.splitlines()) if isinstance(x, MessageLine)]
    assert (message.message_id, message.pending_for) == ("e1", ("eve",))
    assert "bob" not in message.model_dump_json(), message


async def test_the_export_of_an_unregistered_agent_is_404(served: Served) -> None:
    """A typo in the agent id must not read as "this user has no data": 404, as every other
    route of an agent answers."""
    _, carol = await served.keys.create(["carol"], name="carol")
    async with served.client(carol) as c:
        assert (await c.get("/v1/agents/carol/facts")).status_code == 404
        r = await c.get("/v1/agents/carol/users/alice/export")
        assert r.status_code == 404, (r.status_code, r.text)
        assert "carol" in r.json()["detail"]


async def test_a_forget_with_temporal_down_is_a_documented_503_saying_the_store_is_erased(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Temporal unreachable after the store's erasure: the answer says the memory is gone and
    names the runs of the session it deleted, which no later forget can find."""

    async def unreachable(*_: object, **__: object) -> int:
        raise RPCError("tcp connect error 127.0.0.1:7233", RPCStatusCode.UNAVAILABLE, b"")

    temporal = served.memory.settings.temporal.model_copy(update={"search_attributes": True})
    settings = served.memory.settings.model_copy(update={"temporal": temporal})
    monkeypatch.setattr(served.memory, "settings", settings)
    monkeypatch.setattr(memory_client, "delete_user_executions", unreachable)
    await served.h.record("s1", conversation(2))
    transport = httpx.ASGITransport(app=served.app, raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {served.eve_erase}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        r = await c.delete("/v1/agents/eve/users/alice")
    operation = served.app.openapi()["paths"]["/v1/agents/{agent_id}/users/{user_id}"]["delete"]
    assert r.status_code == 503 and "503" in operation["responses"]
    detail = r.json()["detail"]
    assert detail.startswith("the user's memory is erased from the store")
    assert "form:eve:s1, end:eve:s1, consolidate:session:eve:s1" in detail
    assert "127.0.0.1" not in detail  # the transport's failure is the logs'
    assert await served.memory.store.get_session("s1") is None
