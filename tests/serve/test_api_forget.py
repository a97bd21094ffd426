"""DELETE /v1/agents/{agent}/users/{user}: erasure through HTTP, only with a key that may erase."""

from __future__ import annotations

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
