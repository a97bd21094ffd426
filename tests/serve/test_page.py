"""The memory page through HTTP: sign-in, the key's agents only, writes refused to read-only keys,
reflection and blob edits, and the formation runs with their Temporal UI links."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from memory.formation_commit import FactUpdate
from memory.ids import formation_id, text_hash
from memory.models import ScopeKey
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness, conversation
from tests.serve.conftest import Served, form_alice, form_shared
from tests.store.builders import Former, add, at, commit, msg, record, unit


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
        assert "notice=reflection-saved" in r.headers["location"]
        form = {"scope": "user", "user_id": "alice", "expected_version": "0"}
        r = await c.post("/ui/agents/eve/consolidated", data={**form, "content": "Alice: tea."})
        assert "notice=user-memory-saved" in r.headers["location"]
        shown = await c.get(r.headers["location"])
        assert '<p class="notice" role="status">User memory saved.</p>' in shown.text
        stale = await c.post("/ui/agents/eve/consolidated", data={**form, "content": "Again"})
        # Refused: the reason on the page at once (no free text in a URL), and the way back.
        assert stale.status_code == 409 and "Not saved: " in stale.text
        assert 'href="/ui/agents/eve?user_id=alice">Back</a>' in stale.text
    assert (await h.store.list_reflections(key))[0].content == "Alice gets up at six"
    blob = await h.store.get_consolidated(key)
    assert blob is not None and blob.content == "VERSION: 1\nAlice: tea."
    async with browser(served, served.eve) as c:
        r = await c.post(f"/ui/agents/eve/reflections/{reflection.reflection_id}/delete")
        assert r.status_code == 303 and "notice=reflection-deleted" in r.headers["location"]
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
    await record(store, "s2", "eve", [msg("m1", "I moved to Berlin", seconds=50)])
    paris = add("f1", "Alice lives in Paris", unit(1, 0))
    await Former(store, "s1", "eve").form(
        paris.model_copy(update={"source_message_ids": ("m1",), "said_at": at(10)})
    )
    berlin = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Berlin", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m1",), said_at=at(50),
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
    # An HTML page saying so, not a 422 problem for a notice too long.
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "Not saved: no fact &#39;yyyy" in r.text


# ---------------------------------------------------------------- the audit's defects


REFUSED_ORIGINS = [
    {"Sec-Fetch-Site": "same-site"},  # another port of this host: SameSite sends the cookie
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "none"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://test"},  # Sec-Fetch-Site decides
    {"Origin": "http://test:8000"},
    {"Origin": "https://test"},
    {"Origin": "null"},
    {"Referer": "http://test:8000/evil.html"},
    {"Referer": "http://test.evil.example/ui"},
]
ACCEPTED_ORIGINS = [
    {"Sec-Fetch-Site": "same-origin", "Origin": "http://test"},
    {"Origin": "http://test"},
    {"Origin": "http://TEST:80"},
    {"Referer": "http://test/ui/agents/eve"},
    {},  # no browser's request: curl with the key it holds
]


async def test_a_write_from_another_origin_is_refused(served: Served) -> None:
    """SameSite=Strict lets a page on another port of the same host post with the cookie: every
    POST under /ui must come from the page's own origin, or nothing is done (403, a page)."""
    h = served.h
    await form_alice(h)
    fact = next(f for f in await h.all_facts() if f.scope == "user")
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    reflection = (await h.store.list_reflections(key))[0]
    blob = {"scope": "user", "user_id": "alice", "expected_version": "0", "content": "Hacked"}
    writes = [
        (f"/ui/agents/eve/facts/{fact.fact_id}/edit", {"content": "Alice drinks hemlock"}),
        (f"/ui/agents/eve/facts/{fact.fact_id}/delete", {}),
        (f"/ui/agents/eve/reflections/{reflection.reflection_id}/edit", {"content": "Hacked"}),
        (f"/ui/agents/eve/reflections/{reflection.reflection_id}/delete", {}),
        ("/ui/agents/eve/consolidated", blob),
        ("/ui/logout", {}),
    ]
    async with browser(served, served.eve) as c:
        for headers in REFUSED_ORIGINS:
            for url, data in writes:
                r = await c.post(url, data=data, headers=headers)
                assert r.status_code == 403, (headers, url, r.status_code)
                assert r.headers["content-type"].startswith("text/html")
                assert "not sent from this page" in r.text
                assert "set-cookie" not in r.headers  # not even signed out
    assert await h.all_facts() == [*await h.all_facts()]
    assert (await h.store.get_facts([fact.fact_id]))[0] == fact
    assert (await h.store.list_reflections(key))[0] == reflection
    assert await h.store.get_consolidated(key) is None

    # Nor may another page sign the victim in with the attacker's key.
    async with browser(served, None) as c:
        for headers in REFUSED_ORIGINS:
            r = await c.post("/ui/login", data={"api_key": served.bob}, headers=headers)
            assert r.status_code == 403 and "set-cookie" not in r.headers, headers

    # From the page itself (or from no browser at all), the same writes are done.
    async with browser(served, served.eve) as c:
        for n, headers in enumerate(ACCEPTED_ORIGINS):
            r = await c.post(
                f"/ui/agents/eve/facts/{fact.fact_id}/edit",
                data={"content": f"Alice drinks tea number {n}"},
                headers=headers,
            )
            assert r.status_code == 303 and r.headers["location"].endswith("notice=saved"), headers
        r = await c.post("/ui/login", data={"api_key": served.eve}, headers=ACCEPTED_ORIGINS[0])
        assert r.status_code == 303 and "set-cookie" in r.headers
    [edited] = await h.store.get_facts([fact.fact_id])
    assert edited.version == 1 + len(ACCEPTED_ORIGINS)


async def test_no_page_is_cached(served: Served) -> None:
    """After "Sign out", Back must not show the memory: every /ui answer is no-store."""
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with browser(served, served.eve) as c:
        answers = [
            await c.get("/ui/login"),
            await c.get("/ui"),
            await c.get("/ui/agents/eve", params={"user_id": "alice", "q": "tea"}),
            await c.get(f"/ui/agents/eve/facts/{fact.fact_id}"),
            await c.get("/ui/agents/eve/facts/f_unknown"),  # an error page
            await c.get("/ui/agents/eve", params={"user_id": "not valid"}),  # invalid input
            await c.post(f"/ui/agents/eve/facts/{fact.fact_id}/edit", data={"content": "Tea."}),
            await c.post("/ui/logout", headers={"Sec-Fetch-Site": "cross-site"}),  # refused
            await c.post("/ui/logout"),
            await c.get("/ui"),  # signed out: the redirect to the sign-in
        ]
    for r in answers:
        assert r.headers.get("cache-control") == "no-store", (r.request.url, r.status_code)


async def test_a_notice_is_a_code_never_text_from_the_url(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    spoof = "Your key was revoked. Sign in again at http://evil.example/login"
    async with browser(served, served.eve) as c:
        for url in ("/ui/agents/eve", f"/ui/agents/eve/facts/{fact.fact_id}"):
            page = await c.get(url, params={"notice": spoof})
            assert page.status_code == 200
            assert 'class="notice"' not in page.text and "evil.example" not in page.text
            page = await c.get(url, params={"notice": "saved"})
            assert '<p class="notice" role="status">Saved as a new version.</p>' in page.text
        page = await c.get("/ui/login", params={"error": spoof})
        assert "evil.example" not in page.text


async def test_searching_on_the_page_does_not_count_as_the_agents_use(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    query = "Alice drinks green tea every morning"
    async with browser(served, served.eve) as c:
        for _ in range(3):
            page = await c.get("/ui/agents/eve", params={"user_id": "alice", "q": query})
            assert f"/facts/{fact.fact_id}" in page.text.split('class="ranking"')[1]
        shown = await c.get(f"/ui/agents/eve/facts/{fact.fact_id}")
    [after] = await served.h.store.get_facts([fact.fact_id])
    assert after.access_count == fact.access_count == 0
    assert "<dt>Used</dt><dd>0 times</dd>" in shown.text
    # The API's search (the agent's) still counts.
    async with served.client(served.eve) as api:
        r = await api.post("/v1/agents/eve/search", json={"queries": [query], "user_id": "alice"})
        assert r.status_code == 200 and fact.fact_id in r.text
    [after] = await served.h.store.get_facts([fact.fact_id])
    assert after.access_count == 1


async def test_invalid_input_answers_the_pages_own_error_page(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with browser(served, served.eve) as c:
        # An empty optional box means "not given" (the "Open" form sends both of its boxes).
        page = await c.get("/ui/agents/eve", params={"user_id": "alice", "session_id": ""})
        assert page.status_code == 200 and "Alice drinks green tea" in page.text
        page = await c.get("/ui/agents/eve", params={"user_id": " ", "session_id": "s1"})
        assert page.status_code == 200 and "· session <code>s1</code>" in page.text
        refused = {
            "The user id is not a valid id": await c.get(
                "/ui/agents/eve", params={"user_id": "not valid"}
            ),
            "The agent id is not a valid id": await c.get("/ui/agents/bad!id"),
            "The search is too long: at most 2000 characters.": await c.get(
                "/ui/agents/eve", params={"q": "x" * 2001}
            ),
            "Not saved: a fact cannot be empty": await c.post(
                f"/ui/agents/eve/facts/{fact.fact_id}/edit", data={"content": ""}
            ),
            "Not saved: the user memory cannot be empty": await c.post(
                "/ui/agents/eve/consolidated",
                data={"scope": "user", "user_id": "alice", "expected_version": "0"},
            ),
            "The version is missing.": await c.post(
                "/ui/agents/eve/consolidated",
                data={"scope": "user", "user_id": "alice", "content": "Alice: tea."},
            ),
        }
    for sentence, r in refused.items():
        assert r.status_code == 422, (sentence, r.status_code, r.text[:200])
        assert r.headers["content-type"].startswith("text/html"), sentence
        assert sentence in r.text, (sentence, r.text)
    [same] = await served.h.store.get_facts([fact.fact_id])
    assert same == fact


async def test_saving_the_same_text_says_nothing_changed(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with browser(served, served.eve) as c:
        r = await c.post(
            f"/ui/agents/eve/facts/{fact.fact_id}/edit",
            data={"content": f"  {fact.content} "},
            follow_redirects=True,
        )
    assert '<p class="notice" role="status">No change: the text is the same.</p>' in r.text
    assert "Saved as a new version." not in r.text
    assert '<dd id="version">1</dd>' in r.text
    # A blob saved as it stands (Save pressed twice) is no new version either.
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    form = {"scope": "user", "user_id": "alice", "content": "Alice: tea."}
    async with browser(served, served.eve) as c:
        await c.post("/ui/agents/eve/consolidated", data={**form, "expected_version": "0"})
        again = await c.post("/ui/agents/eve/consolidated", data={**form, "expected_version": "1"})
    assert "notice=unchanged" in again.headers["location"]
    blob = await served.h.store.get_consolidated(key)
    assert blob is not None and blob.version == 1


async def test_a_write_goes_back_to_the_user_and_session_the_page_showed(served: Served) -> None:
    h = served.h
    await form_alice(h)
    shown = {"user_id": "alice", "session_id": "s1"}
    session_key = ScopeKey(scope="session", agent_id="eve", session_id="s1")
    [reflection] = await h.store.list_reflections(session_key)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve", params=shown)).text
        form = page.split(f"/reflections/{reflection.reflection_id}/edit")[1].split("</form>")[0]
        assert '<input type="hidden" name="page_user_id" value="alice">' in form
        assert '<input type="hidden" name="page_session_id" value="s1">' in form
        page_ids = {"page_user_id": "alice", "page_session_id": "s1"}
        edit = await c.post(
            f"/ui/agents/eve/reflections/{reflection.reflection_id}/edit",
            data={"content": "The session was about green tea", **page_ids},
        )
        blob = {"scope": "session", "session_id": "s1", "expected_version": "0"}
        saved = await c.post(
            "/ui/agents/eve/consolidated", data={**blob, "content": "Tea.", **page_ids}
        )
        delete = await c.post(
            f"/ui/agents/eve/reflections/{reflection.reflection_id}/delete", data=page_ids
        )
    for r, notice in ((edit, "reflection-saved"), (saved, "session-memory-saved"),
                      (delete, "reflection-deleted")):  # fmt: skip
        assert r.status_code == 303
        assert r.headers["location"] == (
            f"/ui/agents/eve?user_id=alice&session_id=s1&notice={notice}"
        )


async def test_a_read_only_key_sees_its_write_buttons_disabled(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    pages = ["/ui/agents/eve?user_id=alice&session_id=s1", f"/ui/agents/eve/facts/{fact.fact_id}"]
    for token, read_only in ((served.eve_ro, True), (served.eve, False)):
        async with browser(served, token) as c:
            for url in pages:
                text = (await c.get(url)).text
                main = text.split("<main>")[1]  # Sign out, in the header, stays usable
                writes = re.findall(r'<form method="post".*?</form>', main, re.S)
                buttons = re.findall(r"<button[^>]*>", "".join(writes))
                assert len(buttons) >= 2, url
                locked = [b for b in buttons if "disabled" in b]
                assert len(locked) == (len(buttons) if read_only else 0), (url, buttons)
                if read_only:
                    assert all('title="This key is read-only' in b for b in locked)
                    assert "Sign out</button>" in text.split("<main>")[0]


async def test_a_fact_shows_no_message_of_a_later_session_under_its_id(served: Served) -> None:
    """A forget deletes a session whole; its id is free again. A new session under that id,
    another agent's or the same agent's, is not where the fact was said."""
    store = served.h.store
    said = {"chat-1": "The Lyon office opens at 7:30", "chat-2": "The Oslo office closes at 5"}
    for n, (session, text) in enumerate(said.items()):
        await record(store, session, "eve", [msg("m1", text, user_id="u1")])
        fact = add(f"f{n}", text, unit(1, n), scope="agent")  # an agent fact: it stays
        await Former(store, session, "eve").form(
            fact.model_copy(update={"source_message_ids": ("m1",)})
        )
    async with browser(served, served.eve) as c:
        before = (await c.get("/ui/agents/eve/facts/f0")).text
    assert "The Lyon office opens at 7:30</td>" in before.split('id="sources"')[1]

    await store.forget_user("u1", agent_id="eve", at=at(200))
    assert await store.get_session("chat-1") is None and await store.get_session("chat-2") is None
    carol = [msg("m1", "CAROL-SECRET: my test results", user_id="carol")]
    await record(store, "chat-1", "bob", carol, now_seconds=300)  # bob's backend
    dave = [msg("m1", "DAVE: I am moving to Oslo", user_id="dave")]
    await record(store, "chat-2", "eve", dave, now_seconds=300)  # eve's own, a new chat
    async with browser(served, served.eve) as c:
        pages = [(await c.get(f"/ui/agents/eve/facts/f{n}")).text for n in range(2)]
    for page in pages:
        sources = page.split('id="sources"')[1].split("</table>")[0]
        assert "CAROL" not in page and "DAVE" not in page
        assert "The messages m1 are no longer stored." in sources


async def test_a_version_formed_in_a_later_session_shows_its_messages(served: Served) -> None:
    """The session a version cites must be older than that version, not than the fact: a fact
    corrected in a conversation begun after its first formation shows that conversation's
    message; so does a message another agent of a shared session recorded."""
    store = served.h.store
    await record(store, "s1", "eve", [msg("m1", "I live in Paris", seconds=10)])
    paris = add("f1", "Alice lives in Paris", unit(1, 0))
    await Former(store, "s1", "eve").form(paris.model_copy(update={"source_message_ids": ("m1",)}))
    # s2 begins after f1 was formed (at 100); bob records there too, eve forms from his message.
    await record(store, "s2", "eve", [msg("m1", "Hello again", seconds=190)], now_seconds=200)
    await record(store, "s2", "bob", [msg("m2", "I moved to Berlin", seconds=210)], now_seconds=210)
    berlin = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Berlin", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m2",), said_at=at(210),
    )  # fmt: skip
    await store.commit_formation(
        commit(session_id="s2", agent_id="eve", new_cursor=2, ops=[berlin], seconds=300)
    )
    _, both = await served.keys.create(["eve", "bob"], name="eve-and-bob")  # bob recorded m2
    async with browser(served, both) as c:
        page = (await c.get("/ui/agents/eve/facts/f1")).text
    sources = page.split('id="sources"')[1].split("</table>")[0]
    assert "I moved to Berlin</td>" in sources, sources


async def test_a_fact_formed_in_this_session_shows_its_messages_whatever_the_clocks_say(
    served: Served,
) -> None:
    """A formation id names the session's incarnation (memory/ids.py), so the page tells the
    fact's session from a later one under the same id exactly: here a worker's clock put the
    formation (100) before the session's creation on the server's clock (500)."""
    store = served.h.store
    await record(store, "s9", "eve", [msg("m1", "The Lyon office opens at 7:30")], now_seconds=500)
    session = await store.get_session("s9")
    assert session is not None
    fact = add("f-lyon", "The Lyon office opens at 7:30", unit(1, 0), scope="agent")
    formation = formation_id("s9", "eve", 0, 1, session.created_at)
    await store.commit_formation(
        commit(
            session_id="s9", agent_id="eve", formation=formation, seconds=100,
            ops=[fact.model_copy(update={"source_message_ids": ("m1",)})],
        )
    )  # fmt: skip
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve/facts/f-lyon")).text
    assert "The Lyon office opens at 7:30</td>" in page.split('id="sources"')[1]


async def test_another_agents_session_is_answered_as_an_unknown_one(served: Served) -> None:
    await served.h.record("eve-secret", conversation(2))
    async with browser(served, served.bob) as c:
        pages = {
            sid: await c.get("/ui/agents/bob", params={"session_id": sid, "q": "x"})
            for sid in ("eve-secret", "no-such-session")
        }
    assert [p.status_code for p in pages.values()] == [404, 404]
    texts = [p.text.replace(sid, "ID") for sid, p in pages.items()]
    assert texts[0] == texts[1] and "No session ID for this key." in texts[0]


async def test_a_page_the_memory_page_does_not_have_is_its_own_404(served: Served) -> None:
    async with browser(served, served.eve) as c:
        r = await c.get("/ui/agents/eve/no-such-page")
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "There is no such page." in r.text and r.headers["cache-control"] == "no-store"


async def test_a_fact_shows_only_the_messages_recorded_by_an_agent_of_the_key(
    served: Served,
) -> None:
    """Eve formed the fact from a message bob recorded in the session they share. A key for eve
    only reads eve's fact, not bob's record (as the export leaves it out): the page says so."""
    fact_id = await form_shared(served.h)
    _, both = await served.keys.create(["eve", "bob"], name="eve-and-bob")
    pages = {}
    for name, token in (("eve", served.eve), ("both", both)):
        async with browser(served, token) as c:
            pages[name] = await c.get(f"/ui/agents/eve/facts/{fact_id}")
    eve = pages["eve"].text
    sources = eve.split('id="sources"')[1].split("</table>")[0]
    assert pages["eve"].status_code == 200 and "The merger closes on Friday" in eve
    assert "BOB-RECORD" not in eve
    assert "m2 not shown: recorded by an agent this key is not for." in sources, sources
    assert "no longer stored" not in sources
    assert "BOB-RECORD: the merger closes on Friday</td>" in pages["both"].text
    assert "not shown" not in pages["both"].text


async def test_a_session_shared_with_an_agent_the_key_is_not_for_is_neither_listed_nor_written(
    served: Served,
) -> None:
    """Eve's page with a key for eve only: the session eve shares with bob is unknown to the
    key, as the API answers it. Not listed (its link would be a 404), and its session memory is
    not written through the page's forms."""
    await form_shared(served.h)
    await form_alice(served.h)
    store = served.h.store
    scope = ScopeKey.session("eve", "g1")
    before = await store.list_reflections(scope)
    rid = before[0].reflection_id
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve")).text
        opened = await c.get("/ui/agents/eve", params={"session_id": "g1"})
        edit = await c.post(
            f"/ui/agents/eve/reflections/{rid}/edit", data={"content": "eve-only edit"}
        )
        delete = await c.post(f"/ui/agents/eve/reflections/{rid}/delete")
        blob = {"scope": "session", "session_id": "g1", "expected_version": "0"}
        saved = await c.post("/ui/agents/eve/consolidated", data={**blob, "content": "Mine."})
    assert "?session_id=s1" in page and "session_id=g1" not in page
    assert 'value="g1"' not in page and "G1-SESSION-MEMORY" not in page
    assert opened.status_code == 404
    for r in (edit, delete, saved):
        assert r.status_code == 404, r.text
        assert "G1-SESSION-MEMORY" not in r.text
    assert f"No reflection {rid}." in edit.text and f"No reflection {rid}." in delete.text
    assert await store.list_reflections(scope) == before
    assert await store.get_consolidated(scope) is None
