"""The memory page through HTTP: sign-in, the key's agents only, writes refused to read-only keys,
reflection and blob edits, and the formation runs with their Temporal UI links."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from memory.ids import text_hash
from memory.models import FactUpdate, ScopeKey
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness, conversation
from tests.serve.conftest import Served, form_alice
from tests.store.builders import Former, add, at, msg, record, unit


def browser(served: Served, token: str | None) -> httpx.AsyncClient:
    cookies = {"mnemos_key": token} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=served.app), base_url="http://test", cookies=cookies
    )


async def test_sign_in_sets_a_strict_http_only_cookie(served: Served) -> None:
    async with browser(served, None) as c:
        r = await c.get("/ui")
        assert r.status_code == 303 and r.headers["location"] == "/ui/login"
        bad = await c.post("/ui/login", data={"api_key": "mk_x_y"})
        assert bad.status_code == 401 and "Unknown or revoked key." in bad.text
        ok = await c.post("/ui/login", data={"api_key": served.eve})
        assert ok.status_code == 303
        cookie = ok.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        agents = await c.get("/ui")
        assert agents.status_code == 200 and 'href="/ui/agents/eve"' in agents.text
        assert "/ui/agents/bob" not in agents.text
        out = await c.post("/ui/logout")
        assert out.status_code == 303
        assert (await c.get("/ui")).status_code == 303


async def test_another_agents_page_is_forbidden(served: Served) -> None:
    await form_alice(served.h)
    async with browser(served, served.bob) as c:
        r = await c.get("/ui/agents/eve", params={"user_id": "alice"})
        assert r.status_code == 403 and "green tea" not in r.text
        facts = await served.h.all_facts()
        r = await c.get(f"/ui/agents/eve/facts/{facts[0].fact_id}")
        assert r.status_code == 403
        r = await c.post(f"/ui/agents/eve/facts/{facts[0].fact_id}/delete")
        assert r.status_code == 403
    assert len(await served.h.all_facts()) == len(facts)


async def test_a_read_only_key_sees_but_cannot_change(served: Served) -> None:
    await form_alice(served.h)
    facts = await served.h.all_facts()
    async with browser(served, served.eve_ro) as c:
        page = await c.get("/ui/agents/eve", params={"user_id": "alice"})
        assert page.status_code == 200 and "Alice drinks green tea every morning" in page.text
        r = await c.post(
            f"/ui/agents/eve/facts/{facts[0].fact_id}/edit", data={"content": "changed"}
        )
        assert r.status_code == 403 and "read-only" in r.text
    assert await served.h.all_facts() == facts


async def test_edit_a_reflection_and_the_user_blob_from_the_page(served: Served) -> None:
    h = served.h
    await form_alice(h)
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    reflection = (await h.store.list_reflections(key))[0]
    async with browser(served, served.eve) as c:
        page = await c.get("/ui/agents/eve", params={"user_id": "alice"})
        assert "Buffer:" in page.text and "1 / 4 reflections" in page.text
        r = await c.post(
            f"/ui/agents/eve/reflections/{reflection.reflection_id}/edit",
            data={"content": "Alice gets up at six"},
        )
        assert r.status_code == 303 and "user_id=alice" in r.headers["location"]
        assert "notice=Reflection+saved" in r.headers["location"]
        form = {"scope": "user", "user_id": "alice", "expected_version": "0"}
        r = await c.post("/ui/agents/eve/consolidated", data={**form, "content": "Alice: tea."})
        assert "notice=user+memory+saved" in r.headers["location"]
        stale = await c.post("/ui/agents/eve/consolidated", data={**form, "content": "Again"})
        assert "Not+saved" in stale.headers["location"]
    assert (await h.store.list_reflections(key))[0].content == "Alice gets up at six"
    blob = await h.store.get_consolidated(key)
    assert blob is not None and blob.content == "VERSION: 1\nAlice: tea."
    async with browser(served, served.eve) as c:
        r = await c.post(f"/ui/agents/eve/reflections/{reflection.reflection_id}/delete")
        assert r.status_code == 303 and "notice=Reflection+deleted" in r.headers["location"]
    assert await h.store.list_reflections(key) == []


async def test_a_set_aside_reflection_is_shown_and_saving_it_puts_it_back(served: Served) -> None:
    """A reflection no consolidation could take (workflows/consolidate_scope.py) is listed, marked,
    and still a person's to correct: saving it puts it back in the buffer."""
    h = served.h
    await form_alice(h)
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    reflection = (await h.store.list_reflections(key))[0]
    hash_ = text_hash(reflection.content)
    assert await h.store.set_aside_reflection(key, reflection.reflection_id, content_hash=hash_)
    async with browser(served, served.eve) as c:
        page = await c.get("/ui/agents/eve", params={"user_id": "alice"})
        assert reflection.content in page.text and ">set aside</span>" in page.text
        r = await c.post(
            f"/ui/agents/eve/reflections/{reflection.reflection_id}/edit",
            data={"content": "Alice gets up at six"},
        )
        assert r.status_code == 303
    [back] = await h.store.unabsorbed_reflections(key)
    assert (back.reflection_id, back.content) == (reflection.reflection_id, "Alice gets up at six")


async def test_the_page_degrades_when_runs_cannot_be_listed(served: Served) -> None:
    # The time-skipping test server has no visibility queries on our search attributes.
    async with browser(served, served.eve) as c:
        page = await c.get("/ui/agents/eve")
        assert page.status_code == 200
        assert "formation runs are not listed" in page.text


async def test_formation_runs_link_to_the_temporal_ui(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(dev_env, tmp_path)
    h.settings = h.settings.model_copy(
        update={"temporal": h.settings.temporal.model_copy(update={"search_attributes": True})}
    )
    keys = StoreKeyStore(h.store)
    _, token = await keys.create(["eve"])
    served = Served(
        h,
        h.memory,
        keys,
        create_app(h.memory, keys, temporal_ui_url="http://ui"),
        token,
        "",
        "",
        "",
    )
    try:
        await form_alice(h, session="runs-s1")
        async with browser(served, token) as c:
            # Visibility is eventually consistent (the run may first show as running, before its
            # memo): poll the page for the completed run, for at most 20 s.
            deadline = asyncio.get_running_loop().time() + 20
            page = await c.get("/ui/agents/eve")
            while "form:eve:runs-s1" not in page.text or "facts +2" not in page.text:
                assert asyncio.get_running_loop().time() < deadline, page.text
                await asyncio.sleep(0.05)
                page = await c.get("/ui/agents/eve")
        assert "form:eve:runs-s1" in page.text
        link = re.search(r'href="(http://ui/namespaces/default/workflows/[^"]+)"', page.text)
        assert link is not None and link.group(1).startswith(
            "http://ui/namespaces/default/workflows/form%3Aeve%3Aruns-s1/"
        )
        assert "facts +2" in page.text  # the run's memo summary
    finally:
        await h.store.close()


async def test_memory_text_is_escaped_on_the_page(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with served.client(served.eve) as api:
        r = await api.patch(
            f"/v1/agents/eve/facts/{fact.fact_id}", json={"content": "<script>alert(1)</script>"}
        )
        assert r.status_code == 200
    async with browser(served, served.eve) as c:
        page = await c.get(f"/ui/agents/eve/facts/{fact.fact_id}")
        assert "<script>alert(1)</script>" not in page.text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
        # And were an escape ever missed, nothing but the page's own stylesheet loads or runs,
        # and no other site frames it.
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "script-src" not in policy
        assert page.headers["x-content-type-options"] == "nosniff"


async def test_the_search_box_shows_the_fused_rank_and_both_scores(served: Served) -> None:
    await form_alice(served.h)
    async with browser(served, served.eve) as c:
        page = await c.get(
            "/ui/agents/eve",
            params={"user_id": "alice", "q": "Alice drinks green tea every morning"},
        )
    row = re.search(r'<table class="ranking">.*?<tbody>(.*?)</tbody>', page.text, re.S)
    assert row is not None
    cells = re.findall(r"<td>(.*?)</td>", row.group(1).split("</tr>")[0], re.S)
    assert "Alice drinks green tea every morning" in cells[1]
    assert float(cells[5]) > 0.65  # vector cosine, above the semantic threshold
    assert cells[6].split()[0] != "–"  # the text list's score is shown too


async def test_the_page_lists_the_agents_users_and_sessions_from_the_store(
    served: Served,
) -> None:
    h = served.h
    await form_alice(h)  # s1 with alice, formed
    # Recorded, never formed: no fact, reflection or run points at these sessions.
    await h.record("s2", conversation(2, user="carol", start=10, prefix="c"))
    await h.record("s3", conversation(2, user="alice", start=20, prefix="a"))
    await h.record("b1", conversation(2, user="dave", prefix="d"), agent_id="bob")

    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve")).text
        of_alice = (await c.get("/ui/agents/eve", params={"user_id": "alice"})).text

    users = re.findall(r'<a href="/ui/agents/eve\?user_id=([^"&]+)">', page)
    assert users == ["alice", "carol"]  # alice was active last (s3), dave is bob's
    sessions = re.findall(r'<a href="/ui/agents/eve\?session_id=([^"&]+)[^"]*">', page)
    assert sessions == ["s3", "s2", "s1"]
    assert 'user_id=alice">alice</a></td><td>2</td>' in page  # two sessions with eve
    sessions_of_alice = re.findall(r'<a href="/ui/agents/eve\?session_id=([^"&]+)[^"]*">', of_alice)
    assert sessions_of_alice == ["s3", "s1"]


async def test_a_fact_opens_the_messages_it_came_from(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    assert fact.source_message_ids == ("m0000", "m0002")
    async with browser(served, served.eve) as c:
        page = await c.get(f"/ui/agents/eve/facts/{fact.fact_id}")
    assert page.status_code == 200
    sources = page.text.split('id="sources"')[1].split("</table>")[0]
    assert "message 0 from the user" in sources and "message 2 from the user" in sources
    assert "message 1 from the agent" not in sources  # not cited
    assert 'id="said"' in page.text


async def test_a_version_said_in_another_session_opens_that_sessions_message(
    served: Served,
) -> None:
    """Message ids repeat across sessions (both have an m1): the version said in s2 shows s2's
    message, not s1's m1; the earlier version keeps its session in the history."""
    store = served.h.store
    await record(store, "s1", "eve", [msg("m1", "I live in Paris", seconds=10)])
    await record(store, "s2", "eve", [msg("m1", "I moved to Berlin", seconds=500)])
    paris = add("f1", "Alice lives in Paris", unit(1, 0))
    await Former(store, "s1", "eve").form(
        paris.model_copy(update={"source_message_ids": ("m1",), "said_at": at(10)})
    )
    berlin = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Berlin", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m1",), said_at=at(500),
    )  # fmt: skip
    await Former(store, "s2", "eve").form(berlin)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve/facts/f1")).text
    sources = page.split('id="sources"')[1].split("</table>")[0]
    assert "I moved to Berlin" in sources and "I live in Paris" not in sources
    assert '<code id="source-session">s2</code>' in page
    history = page.split('class="history"')[1].split("</table>")[0]
    assert "Alice lives in Paris" in history and "session s1: m1" in history


async def test_an_error_echoing_a_long_input_still_lands_on_the_page(served: Served) -> None:
    async with browser(served, served.eve) as c:
        r = await c.post(
            "/ui/agents/eve/facts/" + "y" * 600 + "/edit",
            data={"content": "hi"},
            follow_redirects=True,
        )
    # The page of an unknown fact (an HTML page), not a 422 problem for a notice too long.
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "No fact yyyy" in r.text
