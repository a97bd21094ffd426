"""Errors outside validation keep the one problem shape: 400 for a body that is no JSON, 405 with
every method of the path, 413, 502 for a formation its provider failed, 503 while Temporal cannot
be reached."""

from __future__ import annotations

import httpx
import pytest
from temporalio.service import RPCError, RPCStatusCode

import client.formation_triggers as formation_triggers
import client.memory_client as memory_client
from serve.limits import MAX_BODY_BYTES
from tests.fakes import permanent
from tests.harness import conversation
from tests.serve.conftest import Served

SESSION_PATH = "/v1/agents/{agent_id}/sessions/{session_id}"


async def test_a_method_a_path_does_not_take_is_405_with_every_method_it_takes(
    served: Served,
) -> None:
    async with served.client(served.eve) as c:
        r = await c.put("/v1/agents/eve/facts/f-1")
        assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET, PATCH"
        assert r.json()["type"] == "urn:mnemos:problem:method-not-allowed"
        r = await c.post("/v1/agents/eve", json={})
        assert r.status_code == 405 and r.headers["allow"] == "GET, PATCH"


async def test_a_body_beyond_the_limit_is_413_before_it_is_read(served: Served) -> None:
    async with served.client(served.eve) as c:
        big = b"x" * (MAX_BODY_BYTES + 1)
        r = await c.post("/v1/agents", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "urn:mnemos:problem:content-too-large"


@pytest.mark.parametrize("offset", [2**63, 1_000_000_001, -1])
async def test_an_offset_out_of_range_is_422_not_a_store_error(served: Served, offset: int) -> None:
    async with served.client(served.eve) as c:
        r = await c.get("/v1/agents/eve/facts", params={"offset": offset})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


async def test_a_cursor_no_listing_gave_is_422_and_pages_name_their_cursors(
    served: Served,
) -> None:
    async with served.client(served.eve) as c:
        bad = await c.get("/v1/agents/eve/facts", params={"cursor": "not-a-cursor"})
        first = (await c.get("/v1/agents/eve/facts", params={"limit": 1})).json()
    assert bad.status_code == 422 and bad.headers["content-type"] == "application/problem+json"
    assert "cursor is not one a fact listing gave" in bad.json()["detail"]
    assert {"next_cursor", "prev_cursor"} <= first.keys() and first["prev_cursor"] is None


@pytest.mark.parametrize("body", [b"{nope", b"[1", b"\xff\xfe"])
async def test_a_body_that_is_no_json_is_400_not_a_field_error(served: Served, body: bytes) -> None:
    """The documented 400: a 422 would name a character offset as if it were a field."""
    async with served.client(served.eve) as c:
        r = await c.post(
            "/v1/agents/eve/search", content=body, headers={"content-type": "application/json"}
        )
    assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"] == "urn:mnemos:problem:bad-request"
    assert problem["detail"].startswith("the body is not JSON") and "errors" not in problem


def _unraised(served: Served) -> httpx.AsyncClient:
    """What an HTTP client gets: Starlette re-raises an unhandled error after its 500 answer."""
    transport = httpx.ASGITransport(app=served.app, raise_app_exceptions=False)
    headers = {"Authorization": f"Bearer {served.eve}"}
    return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)


def _declared(served: Served, route: str) -> set[str]:
    return set(served.app.openapi()["paths"][f"{SESSION_PATH}/{route}"]["post"]["responses"])


@pytest.mark.parametrize("route", ["form?wait=true", "end"])
async def test_a_formation_its_provider_failed_is_a_502_saying_so(
    served: Served, route: str
) -> None:
    """A revoked key, a model the vendor does not know: the run fails for good, and the caller
    is told the provider failed, and what it said, not an internal error."""
    h = served.h
    await h.record("s1", conversation(2))
    h.llm.script("extract_facts", *[permanent("the model does not exist")] * 10)
    async with h.worker(), _unraised(served) as c:
        r = await c.post(f"/v1/agents/eve/sessions/s1/{route}")
    assert r.status_code == 502, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"] == "urn:mnemos:problem:provider-error"
    assert "form:eve:s1" in problem["detail"] and "the model does not exist" in problem["detail"]
    assert "502" in _declared(served, route.partition("?")[0])
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.pending_messages == 2  # stored, to form again


# What the Temporal client raises when its server is down, and when it hangs: the client's own
# RPC timeout comes back as CANCELLED "Timeout expired".
_UNREACHABLE = {
    "down": RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b""),
    "hung": RPCError("Timeout expired", RPCStatusCode.CANCELLED, b""),
}


@pytest.mark.parametrize("how", list(_UNREACHABLE))
@pytest.mark.parametrize("route", ["form", "end"])
async def test_temporal_unreachable_is_a_503(
    served: Served, monkeypatch: pytest.MonkeyPatch, route: str, how: str
) -> None:
    async def unreachable(*_: object, **__: object) -> None:
        raise _UNREACHABLE[how]

    await served.h.record("s1", conversation(2))
    monkeypatch.setattr(formation_triggers, "start_formation", unreachable)
    monkeypatch.setattr(memory_client, "start_session_end", unreachable)
    async with _unraised(served) as c:
        r = await c.post(f"/v1/agents/eve/sessions/s1/{route}")
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"] == "urn:mnemos:problem:unavailable"
    assert "Temporal" in problem["detail"] and "tcp connect" not in problem["detail"]
    assert "503" in _declared(served, route)
