"""The bounds of the three long text fields the API takes, at their edges: a message's content
(100,000 characters), a fact's edit and a consolidated blob's edit (20,000 each). At the bound
the request is accepted and stored whole; one character over, blank, with a control character,
of the wrong type or missing, it is refused with a 422 (naming the field where the schema
refuses it), and nothing changes.

Schemathesis' coverage phase (tests/serve/test_contract.py) would derive these cases from the
document, but building them for these fields' long bounds costs ~15 s at collection in every
pytest worker; the contract test skips that phase for these operations, and this file checks
the same edges directly."""

from __future__ import annotations

from typing import Any

import httpx

from tests.harness import conversation
from tests.serve.conftest import Served, form_alice

MESSAGE_MAX = 100_000
EDIT_MAX = 20_000


def _refused(r: httpx.Response, field: str) -> bool:
    """A 422 problem; a schema violation names the field (a blank text is refused by its
    handler, which says what cannot be empty)."""
    body = r.json()
    named = [e["loc"][-1] for e in body.get("errors", [])] or [field]
    return r.status_code == 422 and body["type"].endswith(":invalid-input") and named == [field]


def _bad_contents(limit: int) -> list[Any]:
    """Each refused: one over the bound, blank, a control character, not a string."""
    return ["x" * (limit + 1), "   ", "tea\x00time", 42]


async def test_a_message_at_the_bound_is_stored_whole_and_past_it_refused(served: Served) -> None:
    base = conversation(1)[0].model_dump(mode="json")
    url = "/v1/agents/eve/sessions/s1/messages"
    async with served.client(served.eve) as c:
        for i, content in enumerate(_bad_contents(MESSAGE_MAX)):
            r = await c.post(
                url, json={"messages": [base | {"message_id": f"m{i}", "content": content}]}
            )
            assert _refused(r, "content"), (repr(content)[:20], r.status_code, r.text[:200])
        missing = {k: v for k, v in base.items() if k != "content"}
        assert _refused(await c.post(url, json={"messages": [missing]}), "content")
        assert await served.h.store.get_session_agent_state("s1", "eve") is None  # nothing stored

        longest = "y" * MESSAGE_MAX
        r = await c.post(url, json={"messages": [base | {"content": longest}]})
        assert r.status_code == 202, r.text[:200]
    stored = await served.h.store.load_messages("s1", 0, 10)
    assert [m.content for m in stored] == [longest]


async def test_a_fact_edit_at_the_bound_is_kept_and_past_it_refused(served: Served) -> None:
    await form_alice(served.h)
    async with served.client(served.eve) as c:
        page = (await c.get("/v1/agents/eve/facts", params={"user_id": "alice"})).json()
        fact = next(f for f in page["facts"] if f["scope"] == "user")
        url = f"/v1/agents/eve/facts/{fact['fact_id']}"
        for content in _bad_contents(EDIT_MAX):
            assert _refused(await c.patch(url, json={"content": content}), "content")
        assert _refused(await c.patch(url, json={}), "content")
        assert (await c.get(url)).json()["version"] == fact["version"]  # unchanged

        longest = "z" * EDIT_MAX
        r = await c.patch(url, json={"content": longest})
        assert r.status_code == 200 and r.json()["content"] == longest


async def test_a_consolidated_edit_at_the_bound_is_kept_and_past_it_refused(
    served: Served,
) -> None:
    url = "/v1/agents/eve/scopes/agent/consolidated"
    async with served.client(served.eve) as c:
        for content in _bad_contents(EDIT_MAX):
            assert _refused(await c.put(url, json={"content": content}), "content")
        assert _refused(await c.put(url, json={}), "content")
        assert (await c.get(url)).status_code == 404  # nothing was written

        longest = "w" * EDIT_MAX
        r = await c.put(url, json={"content": longest})
        assert r.status_code == 200 and r.json()["version"] == 1
        assert (await c.get(url)).json()["content"].endswith(longest)
