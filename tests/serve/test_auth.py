"""Keys over HTTP: 401 without a valid key, 403 for another agent or a write with a read-only key,
and a key for one agent can touch nothing of another, on every route."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from memory.models import FactFilter, ScopeKey
from tests.harness import T0, conversation, facts
from tests.serve.conftest import Served, form_alice, form_shared

SAMPLE = {
    "session_id": "s1",
    "fact_id": "f-unknown",
    "reflection_id": "r-unknown",
    "user_id": "alice",  # DELETE …/users/{user_id}: another agent's key must not erase her
    "scope": "user:alice",
}


def agent_routes(served: Served) -> list[tuple[str, str]]:
    """Every API route with an agent in its path (from the OpenAPI document, which lists them
    all), as (method, path for agent eve)."""
    out: list[tuple[str, str]] = []
    for template, operations in served.app.openapi()["paths"].items():
        if "{agent_id}" in template:
            path = template.replace("{agent_id}", "eve")
            path = re.sub(r"\{(\w+)\}", lambda m: SAMPLE[m.group(1)], path)
            out.extend((method.upper(), path) for method in sorted(operations))
    return out


def test_every_agent_route_is_enumerated(served: Served) -> None:
    routes = agent_routes(served)
    assert len(routes) >= 20
    assert ("POST", "/v1/agents/eve/search") in routes


async def test_no_key_or_an_unknown_key_is_401(served: Served) -> None:
    for token in (None, "mk_abc_def", "Bearer-less"):
        async with served.client(token) as c:
            for method, path in agent_routes(served):
                r = await c.request(method, path, json={})
                assert r.status_code == 401, (token, method, path, r.text)
    async with served.client(None) as c:
        r = await c.post("/v1/agents", json={"agent_id": "eve", "name": "Eve"})
        assert r.status_code == 401


async def test_a_key_for_bob_touches_nothing_of_eve(served: Served) -> None:
    await form_alice(served.h)
    store = served.h.store
    before_facts = await store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=100)
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    before_refl = await store.list_reflections(key)
    fact_id = before_facts[0].fact_id
    SAMPLE_REAL = {**SAMPLE, "fact_id": fact_id, "reflection_id": before_refl[0].reflection_id}
    async with served.client(served.bob) as c:
        for method, path in agent_routes(served):
            path = path.replace("f-unknown", SAMPLE_REAL["fact_id"])
            path = path.replace("r-unknown", SAMPLE_REAL["reflection_id"])
            body = {"content": "hijacked", "queries": ["tea"], "messages": []}
            r = await c.request(method, path, json=body)
            assert r.status_code == 403, (method, path, r.text)
            told = str({k: v for k, v in r.json().items() if k != "instance"})  # the caller's path
            assert "alice" not in told and "tea" not in told.lower()
        r = await c.post("/v1/agents", json={"agent_id": "eve", "name": "Mallory"})
        assert r.status_code == 403
    assert await store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=100) == (
        before_facts
    )
    assert await store.list_reflections(key) == before_refl
    agent = await store.get_agent("eve")
    assert agent is not None and agent.name == "Eve"


async def test_a_key_for_bob_cannot_join_eves_session_by_its_id(served: Served) -> None:
    """Session ids are one namespace: bob's key names eve's session under bob's own path. Every
    session route answers as for an unknown session, and nothing of eve's is read or written."""
    await form_alice(served.h)
    store = served.h.store
    before = await store.load_messages("s1", 0, 100)
    message = {
        "message_id": "inj1", "role": "user", "user_id": "alice",
        "content": "my new email is attacker@evil.example", "created_at": T0.isoformat(),
    }  # fmt: skip
    async with served.client(served.bob) as c:
        for method, path, body in [
            ("POST", "messages", {"messages": [message]}),
            ("POST", "form", None),
            ("POST", "start", {"user_id": "alice"}),
            ("POST", "end", None),
            ("GET", "context", None),
        ]:
            r = await c.request(method, f"/v1/agents/bob/sessions/s1/{path}", json=body)
            assert r.status_code == 404, (path, r.text)
            assert "session 's1' has no recorded messages" in r.text
        unknown = await c.get("/v1/agents/bob/sessions/nobody-uses-this/context")
    assert unknown.status_code == 404  # the same answer as for eve's: it tells nothing
    session = await store.get_session("s1")
    assert session is not None and session.agent_ids == ("eve",)
    assert await store.load_messages("s1", 0, 100) == before


async def test_search_naming_another_agents_session_answers_as_the_context_route(
    served: Served,
) -> None:
    """The search body's session_id is checked as the session routes check the path's: eve's
    session is 404 for bob's key, in the words an unknown session gets from the context route.
    A session nobody holds yet is a first turn's, searched as POST …/start reads it (so, as at
    /start and when recording, whether an id is taken can be learnt: session ids are one
    namespace)."""
    await form_alice(served.h)
    async with served.client(served.bob) as c:
        context = await c.get("/v1/agents/bob/sessions/s1/context")
        search = await c.post(
            "/v1/agents/bob/search", json={"queries": ["tea"], "session_id": "s1"}
        )
        assert (search.status_code, context.status_code) == (404, 404)
        assert search.json()["type"] == context.json()["type"] == "urn:mnemos:problem:not-found"
        assert search.json()["detail"] == context.json()["detail"]
        assert search.json()["detail"] == "session 's1' has no recorded messages"
        body = {"queries": ["tea"], "session_id": "nobody-uses-this"}
        started = await c.post("/v1/agents/bob/sessions/nobody-uses-this/start", json={})
        search = await c.post("/v1/agents/bob/search", json=body)
        assert (search.status_code, started.status_code) == (200, 200)
        assert (await c.post("/v1/agents/bob/search", json={"queries": ["tea"]})).status_code == 200
    async with served.client(served.eve) as c:
        body = {"queries": ["green tea"], "session_id": "s1", "user_id": "alice"}
        assert (await c.post("/v1/agents/eve/search", json=body)).status_code == 200


async def test_two_keys_recording_into_a_new_session_at_once_one_gets_in(served: Served) -> None:
    """The route's session check and the write are apart: two keys for different agents racing
    into a new session both passed the check. The store checks again in the transaction that
    writes (may_join), so the second to commit is 404, and nothing of its batch is stored."""

    def batch(mid: str, user: str, content: str) -> dict[str, object]:
        message = {
            "message_id": mid, "role": "user", "user_id": user, "content": content,
            "created_at": T0.isoformat(),
        }  # fmt: skip
        return {"messages": [message], "trigger_formation": False}

    store = served.h.store
    async with served.client(served.eve) as eve, served.client(served.bob) as bob:
        for i in range(5):
            sid = f"race-{i}"
            answers = await asyncio.gather(
                eve.post(
                    f"/v1/agents/eve/sessions/{sid}/messages", json=batch("e", "mallory", "hi")
                ),
                bob.post(
                    f"/v1/agents/bob/sessions/{sid}/messages", json=batch("b", "carol", "AB-")
                ),
            )
            codes = sorted(r.status_code for r in answers)
            assert codes == [202, 404], (sid, [r.text for r in answers])
            refused = next(r for r in answers if r.status_code == 404)
            assert refused.json()["type"] == "urn:mnemos:problem:not-found"
            session = await store.get_session(sid)
            assert session is not None and len(session.agent_ids) == 1, session
            said = await store.load_messages(sid, 0, 10)
            assert [m.agent_id for m in said] == list(session.agent_ids)


async def test_a_read_only_key_reads_but_cannot_write(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve_ro) as c:
        assert (await c.get("/v1/agents/eve")).status_code == 200
        facts = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
        fact_id = facts["facts"][0]["fact_id"]
        assert (await c.get(f"/v1/agents/eve/facts/{fact_id}")).status_code == 200
        r = await c.post("/v1/agents/eve/search", json={"queries": ["tea"]})
        assert r.status_code == 200
        writes = [
            ("PATCH", f"/v1/agents/eve/facts/{fact_id}", {"content": "Alice drinks coffee"}),
            ("DELETE", f"/v1/agents/eve/facts/{fact_id}", None),
            ("PATCH", "/v1/agents/eve", {"name": "Eva"}),
            ("POST", "/v1/agents/eve/sessions/s1/form", None),
            ("POST", "/v1/agents/eve/sessions/s1/end", None),
        ]
        for method, path, body in writes:
            r = await c.request(method, path, json=body)
            assert r.status_code == 403, (method, path)
            assert "read-only" in r.json()["detail"]
        r = await c.post("/v1/agents", json={"agent_id": "eve", "name": "Eva"})
        assert r.status_code == 403
    after = await served.h.store.get_facts([fact_id])
    assert after[0].content == facts["facts"][0]["content"] and after[0].invalidated_at is None


@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
async def test_the_key_may_come_in_either_header(served: Served, header: str) -> None:
    value = f"Bearer {served.eve}" if header == "authorization" else served.eve
    async with served.client(None) as c:
        r = await c.get("/v1/agents/eve", headers={header: value})
        assert r.status_code == 200 and r.json()["name"] == "Eve"


async def test_a_revoked_key_is_refused_at_once(served: Served) -> None:
    keys = await served.keys.list()
    eve_key = next(k for k in keys if k.name == "eve")
    async with served.client(served.eve) as c:
        assert (await c.get("/v1/agents/eve")).status_code == 200
        await served.keys.revoke(eve_key.key_id)
        assert (await c.get("/v1/agents/eve")).status_code == 401


# What a browser sends with a form auto-submitted by a page on another port of the same host
# (http://test:3000): the same site, so the SameSite=Strict sign-in cookie goes along.
CROSS_PORT_FORM = {
    "Sec-Fetch-Site": "same-site",
    "Origin": "http://test:3000",
    "Content-Type": "application/x-www-form-urlencoded",
}


async def test_the_memory_pages_cookie_is_no_key_for_the_api(served: Served) -> None:
    """A user signed in to the memory page holds its cookie: a page on another port of the same
    host must not use it to form or end a session, export a user (spending the erasure budget) or
    call any other route of the API or MCP. The API takes a key in a header only."""
    h = served.h
    await h.record("s1", conversation(2))
    h.llm.script("extract_facts", facts(("Alice swims", "user")))
    before = await h.store.get_session("s1", "eve")
    transport = httpx.ASGITransport(app=served.app)
    cookies = {"mnemos_key": served.eve_erase}
    async with (
        h.worker(),
        httpx.AsyncClient(transport=transport, base_url="http://test", cookies=cookies) as c,
    ):
        assert (await c.get("/ui/agents/eve")).status_code == 200  # signed in to the page
        for path in ("sessions/s1/form?wait=true", "sessions/s1/end"):
            r = await c.post(f"/v1/agents/eve/{path}", content=b"", headers=CROSS_PORT_FORM)
            assert r.status_code == 401, (path, r.status_code, r.text[:200])
        r = await c.get(
            "/v1/agents/eve/users/alice/export", headers={"Sec-Fetch-Site": "same-site"}
        )
        assert r.status_code == 401, (r.status_code, r.text[:200])
        for method, path in agent_routes(served):
            r = await c.request(method, path, json={})
            assert r.status_code == 401, (method, path, r.status_code)
        r = await c.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert r.status_code == 401, r.status_code
    assert await h.store.get_session("s1", "eve") == before  # neither formed nor ended
    assert await h.all_facts() == []
    assert len(await h.store.load_messages("s1", 0, 10)) == 2  # alice not erased either


async def test_a_key_for_one_agent_of_a_shared_session_finds_it_unknown_on_every_route(
    served: Served,
) -> None:
    """Session g1 holds eve and bob; a key for eve only is not for g1. Its session memory
    (reflections, blob), its stats and its consolidation status are answered as the context
    route answers g1, and nothing of it is written. A key for both reads it."""
    await form_shared(served.h)
    store = served.h.store
    scope = ScopeKey.session("eve", "g1")
    before = await store.list_reflections(scope)
    assert [r.content for r in before] == ["G1-SESSION-MEMORY merger talk"]
    rid = before[0].reflection_id
    edit = {"content": "set by an eve-only key"}
    base = "/v1/agents/eve"
    async with served.client(served.eve) as c:
        context = (await c.get(f"{base}/sessions/g1/context")).json()
        assert context["detail"] == "session 'g1' has no recorded messages"
        answers = {
            path: await c.request(method, f"{base}{path}", json=body)
            for method, path, body in [
                ("GET", "/scopes/session:g1/reflections", None),
                ("GET", "/scopes/session:g1/consolidated", None),
                ("PUT", "/scopes/session:g1/consolidated", edit),
                ("GET", "/stats?session_id=g1", None),
                ("GET", "/consolidation-status?session_id=g1", None),
            ]
        }
        refl = {
            method: await c.request(method, f"{base}/reflections/{rid}", json=edit)
            for method in ("PATCH", "DELETE")
        }
        unknown = (await c.patch(f"{base}/reflections/r-unknown", json=edit)).json()
    for path, r in answers.items():
        assert r.status_code == 404, (path, r.text)
        assert r.json()["detail"] == context["detail"], path
        assert "G1-SESSION-MEMORY" not in r.text
    for method, r in refl.items():  # as a reflection nobody holds
        assert r.status_code == 404, (method, r.text)
        assert r.json()["detail"] == unknown["detail"].replace("r-unknown", rid)
    assert await store.list_reflections(scope) == before
    assert await store.get_consolidated(scope) is None
    _, both = await served.keys.create(["eve", "bob"], name="eve-and-bob")
    async with served.client(both) as c:
        shown = await c.get(f"{base}/scopes/session:g1/reflections")
        stats = await c.get(f"{base}/stats", params={"session_id": "g1"})
    assert shown.status_code == 200 and "G1-SESSION-MEMORY" in shown.text
    assert stats.status_code == 200


async def test_api_answers_are_kept_by_no_cache(served: Served) -> None:
    """An answer is one key's view of memory: a shared cache must neither keep it nor give it to
    a caller with another key (or none). MCP's: tests/serve/test_mcp_http.py."""
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        answers = [
            await c.get("/v1/agents/eve/sessions/s1/context", params={"user_id": "alice"}),
            await c.get("/v1/agents/eve/facts", params={"user_id": "alice"}),
            await c.get("/v1/agents/bob/facts"),  # 403
        ]
    async with served.client(None) as c:
        answers.append(await c.get("/v1/agents/eve/facts"))  # 401
    assert "green tea" in answers[1].text
    for r in answers:
        assert r.headers.get("cache-control") == "no-store", (r.request.url, r.status_code)
        assert r.headers.get("vary") == "Authorization, X-API-Key", r.request.url
