"""Facts, search, reflections, consolidated memory, stats and health through HTTP."""

from __future__ import annotations

from typing import Any

import httpx

from tests.serve.conftest import Served, form_alice


async def _alice_fact(c: httpx.AsyncClient) -> dict[str, Any]:
    page = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
    fact: dict[str, Any] = next(f for f in page["facts"] if f["scope"] == "user")
    return fact


async def test_facts_list_get_edit_history_delete(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        page = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
        assert page["valid_total"] == 2 and not page["has_more"]
        agent_only = (await c.get("/v1/agents/eve/facts")).json()
        assert [f["content"] for f in agent_only["facts"]] == ["Eve answers in French"]
        fact = await _alice_fact(c)
        url = f"/v1/agents/eve/facts/{fact['fact_id']}"
        assert (await c.get(url)).json()["version"] == 1
        r = await c.patch(url, json={"content": "Alice drinks oolong every morning"})
        assert r.status_code == 200 and r.json()["version"] == 2
        history = (await c.get(f"{url}/history")).json()
        assert [h["content"] for h in history][-1] == "Alice drinks green tea every morning"
        assert (await c.patch(url, json={"content": "  "})).status_code == 422
        r = await c.delete(url)
        assert r.status_code == 200 and r.json()["invalidated_at"] is not None
        r = await c.patch(url, json={"content": "Alice drinks coffee"})
        assert r.status_code == 409
        gone = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
        assert fact["fact_id"] not in [f["fact_id"] for f in gone["facts"]]
        deleted = await c.get(
            "/v1/agents/eve/facts", params={"user_id": "alice", "include_invalid": "true"}
        )
        assert fact["fact_id"] in [f["fact_id"] for f in deleted.json()["facts"]]
        assert (await c.get("/v1/agents/eve/facts/nope")).status_code == 404
        assert (await c.get("/v1/agents/eve/facts", params={"limit": 0})).status_code == 422


async def test_a_fact_or_reflection_edit_of_what_changed_since_is_a_409(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        fact = await _alice_fact(c)
        url = f"/v1/agents/eve/facts/{fact['fact_id']}"
        first = await c.patch(url, json={"content": "Alice drinks oolong", "expected_version": 1})
        assert first.status_code == 200 and first.json()["version"] == 2
        # Another UI edited version 1 too: its save must not replace version 2 unseen.
        stale = await c.patch(url, json={"content": "Alice drinks mate", "expected_version": 1})
        assert stale.status_code == 409 and "version 2, not 1" in stale.json()["detail"]
        assert (await c.get(url)).json()["content"] == "Alice drinks oolong"
        # Without expected_version an edit replaces whichever version is stored, as before.
        r = await c.patch(url, json={"content": "Alice drinks mate"})
        assert r.status_code == 200 and r.json()["version"] == 3

        [refl] = (await c.get("/v1/agents/eve/scopes/user:alice/reflections")).json()
        url = f"/v1/agents/eve/reflections/{refl['reflection_id']}"
        read = refl["content"]
        first = await c.patch(url, json={"content": "Alice wakes at six", "expected_content": read})
        assert first.status_code == 200
        stale = await c.patch(url, json={"content": "Alice runs", "expected_content": read})
        assert stale.status_code == 409 and "changed since" in stale.json()["detail"]
        assert (await c.patch(url, json={"content": "Alice runs"})).status_code == 200


async def test_search_returns_hits_and_on_request_both_lists(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        body = {"queries": ["Alice drinks green tea every morning"], "user_id": "alice"}
        r = await c.post("/v1/agents/eve/search", json={**body, "debug": True})
        assert r.status_code == 200
        result = r.json()
        assert result["hits"][0]["content"] == "Alice drinks green tea every morning"
        sources = {lst["source"] for lst in result["debug"]["lists"]}
        assert sources == {"vector", "text"}
        plain = (await c.post("/v1/agents/eve/search", json=body)).json()
        assert plain["debug"] is None
        r = await c.post("/v1/agents/eve/search", json={"queries": []})
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "queries"]
        r = await c.post("/v1/agents/eve/search", json={"queries": ["x"], "top_k": 1000})
        assert r.status_code == 422 and "top_k" in r.text


async def test_reflections_list_edit_delete(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        url = "/v1/agents/eve/scopes/user:alice/reflections"
        listed = (await c.get(url)).json()
        assert [r["content"] for r in listed] == ["Alice is a morning person"]
        rid = listed[0]["reflection_id"]
        r = await c.patch(
            f"/v1/agents/eve/reflections/{rid}", json={"content": "Alice wakes at six"}
        )
        assert r.status_code == 200 and r.json()["content"] == "Alice wakes at six"
        assert (await c.delete(f"/v1/agents/eve/reflections/{rid}")).status_code == 204
        assert (await c.get(url)).json() == []
        assert (await c.delete(f"/v1/agents/eve/reflections/{rid}")).status_code == 404
        r = await c.get("/v1/agents/eve/scopes/user/reflections")  # a user scope names its user
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "scope"]
        r = await c.get("/v1/agents/eve/scopes/planet/reflections")
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


async def test_consolidated_get_and_edit_with_versions(served: Served) -> None:
    async with served.client(served.eve) as c:
        url = "/v1/agents/eve/scopes/agent/consolidated"
        assert (await c.get(url)).status_code == 404
        r = await c.put(url, json={"content": "Eve is terse."})
        assert r.status_code == 200 and r.json()["version"] == 1
        got = (await c.get(url)).json()
        assert got["content"] == "VERSION: 1\nEve is terse." and got["edited_by"] == "manual"
        stale = await c.put(url, json={"content": "Other", "expected_version": 0})
        assert stale.status_code == 409 and stale.json()["status"] == 409
        r = await c.get("/v1/agents/nobody/scopes/agent/consolidated")
        assert r.status_code == 403


async def test_stats_and_consolidation_status(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        stats = (await c.get("/v1/agents/eve/stats", params={"user_id": "alice"})).json()
        scopes = {s["scope_key"]["scope"]: s for s in stats["scopes"]}
        assert scopes["user"]["valid_facts"] == 1 and scopes["agent"]["valid_facts"] == 1
        assert scopes["user"]["buffered_reflections"] == 1
        status = (
            await c.get("/v1/agents/eve/consolidation-status", params={"session_id": "s1"})
        ).json()
        assert [s["scope_key"]["scope"] for s in status] == ["agent", "session"]
        assert all(s["buffered"] == 1 and not s["due"] for s in status)


async def test_health_readiness_and_docs(served: Served) -> None:
    async with served.client(None) as c:
        assert (await c.get("/healthz")).json() == {"status": "ok", "checks": {}}
        ready = await c.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"] == {"temporal": "ok", "store": "ok"}
        spec = (await c.get("/openapi.json")).json()
        assert "/v1/agents/{agent_id}/sessions/{session_id}/messages" in spec["paths"]
        # Every fact says where it came from (provenance, #20).
        fact = spec["components"]["schemas"]["Fact"]["properties"]
        assert {"source_message_ids", "formation_id", "said_at"} <= set(fact)
        assert (await c.get("/docs")).status_code == 200


async def test_readiness_names_what_is_down(served: Served) -> None:
    await served.h.store.close()
    async with served.client(None) as c:
        ready = await c.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"]["temporal"] == "ok"
        assert ready.json()["checks"]["store"].startswith("unavailable")


async def test_deleting_an_absorbed_reflection_is_a_documented_409(served: Served) -> None:
    """The OpenAPI document lists every status an operation answers (a generated client has a
    type for each): the 409 of a consolidated reflection's DELETE was missing."""
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        async with served.h.worker():
            assert (await c.post("/v1/agents/eve/sessions/s1/end")).status_code == 200
        listed = await c.get(
            "/v1/agents/eve/scopes/session:s1/reflections", params={"include_absorbed": "true"}
        )
        rid = listed.json()[0]["reflection_id"]
        r = await c.delete(f"/v1/agents/eve/reflections/{rid}")
        assert r.status_code == 409
        operation = served.app.openapi()["paths"][
            "/v1/agents/{agent_id}/reflections/{reflection_id}"
        ]
        assert "409" in operation["delete"]["responses"]
