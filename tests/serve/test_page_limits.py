"""The memory page holds the API's bounds: an edit longer than the API takes (20,000 characters,
one long "word" included) is refused on the page as over the API, by the manager both call; and a
form its parser refuses (a box over 1 MiB, a body past 8 MiB) still answers the page's own HTML
error page, never a JSON problem."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from client.management import MAX_EDIT_CHARS
from memory.errors import InvalidInputError
from memory.models import ScopeKey
from memory.settings import Settings
from serve.app import openapi_document
from tests.serve.conftest import Served, form_alice
from tests.serve.test_page import browser

EDIT_MAX = 20_000  # what the OpenAPI document states for every edit's content


def test_the_manager_holds_the_bound_the_api_states() -> None:
    """One bound for every door: the manager's is the document's, for each edit's text."""
    schemas = openapi_document(Settings())["components"]["schemas"]
    for edit in ("FactEdit", "ReflectionEdit", "ConsolidatedEdit"):
        assert schemas[edit]["properties"]["content"]["maxLength"] == MAX_EDIT_CHARS == EDIT_MAX


async def test_an_edit_past_the_bound_is_refused_on_the_page_and_at_it_kept(
    served: Served,
) -> None:
    h = served.h
    await form_alice(h)
    fact = next(f for f in await h.all_facts() if f.scope == "user")
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    reflection = (await h.store.list_reflections(key))[0]
    blob = {"scope": "user", "user_id": "alice", "expected_version": "0"}
    edits = {  # what a user pastes into each box: one "word", so no word limit stops it
        f"/ui/agents/eve/facts/{fact.fact_id}/edit": {},
        f"/ui/agents/eve/reflections/{reflection.reflection_id}/edit": {},
        "/ui/agents/eve/consolidated": blob,
    }
    async with browser(served, served.eve) as c:
        for url, form in edits.items():
            r = await c.post(url, data={**form, "content": "x" * (EDIT_MAX + 1)})
            assert r.status_code == 422, (url, r.status_code)
            assert r.headers["content-type"].startswith("text/html")
            assert f"at most {EDIT_MAX:,} characters" in r.text, r.text[-400:]
        assert await h.store.get_facts([fact.fact_id]) == [fact]
        assert await h.store.get_reflection(reflection.reflection_id) == reflection
        assert await h.store.get_consolidated(key) is None
        # A backend's own UI, calling the manager itself, is held to the same bound.
        with pytest.raises(InvalidInputError, match="at most 20,000 characters"):
            await served.memory.manager.edit_fact(fact.fact_id, "x" * (EDIT_MAX + 1))

        # At the bound, as the API: kept whole.
        for url, form in edits.items():
            r = await c.post(url, data={**form, "content": "y" * EDIT_MAX})
            assert r.status_code == 303, (url, r.status_code, r.text[-300:])
    [edited] = await h.store.get_facts([fact.fact_id])
    assert edited.content == "y" * EDIT_MAX and edited.version == fact.version + 1
    edited_reflection = await h.store.get_reflection(reflection.reflection_id)
    assert edited_reflection is not None and edited_reflection.content == "y" * EDIT_MAX
    saved = await h.store.get_consolidated(key)
    assert saved is not None and saved.content == "VERSION: 1\n" + "y" * EDIT_MAX


async def _streamed(body: bytes) -> AsyncIterator[bytes]:
    """Sent in chunks, without Content-Length: the body limit is found as it is read."""
    for start in range(0, len(body), 1 << 20):
        yield body[start : start + (1 << 20)]


async def test_a_form_too_large_to_read_answers_the_pages_error_page(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    url = f"/ui/agents/eve/facts/{fact.fact_id}/edit"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with browser(served, served.eve) as c:
        # A paste of over 1 MiB into the box: the form's parser refuses the field.
        big_box = await c.post(url, data={"content": "x" * (1024 * 1024 + 1)})
        # Nine boxes of 1,000,000 characters: each under the parser's bound, the body over 8 MiB.
        body = "&".join(f"b{i}=" + "x" * 1_000_000 for i in range(9)).encode()
        big_body = await c.post(url, content=_streamed(body), headers=form)
    for r, code, sentence in (
        (big_box, 400, "a box holds at most 1 MiB of text"),
        (big_body, 413, "the form is larger than the server takes (8 MiB)"),
    ):
        assert r.status_code == code, (code, r.status_code, r.text[:200])
        assert r.headers["content-type"].startswith("text/html"), r.text[:200]
        assert sentence in r.text
        assert r.headers["x-frame-options"] == "DENY"  # the page's headers, as on every answer
    assert await served.h.store.get_facts([fact.fact_id]) == [fact]
