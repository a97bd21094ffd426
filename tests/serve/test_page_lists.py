"""The memory page shows all of a person's memory, truthfully: every fact of a user reachable on
their own page (in pages, each linked to the next), a set-aside reflection however many newer
ones were buffered, the agent's true count of users and sessions, and every time with its zone."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from client.management import MAX_PAGE
from memory.ids import text_hash
from memory.models import MessageIn, ScopeKey
from serve import page_view
from tests.serve.conftest import Served
from tests.serve.test_page import browser
from tests.store.builders import Former, add, msg, record, reflection, unit

FACT_LINK = re.compile(r'href="(/ui/agents/eve/facts/[^"]+)"')


def facts_section(page: str) -> str:
    return page.split('<section id="facts">')[1].split("</section>")[0]


def next_link(page: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" rel="next">', facts_section(page))
    return None if found is None else found.group(1).replace("&amp;", "&")


async def test_every_fact_of_a_user_can_be_reached_page_by_page(served: Served) -> None:
    store = served.h.store
    await record(store, "chat-1", "eve", [msg("m1", "many facts", user_id="u1")])
    ops = [add(f"f{n:03d}", f"Fact number {n:03d}", unit(1, n / 100)) for n in range(120)]
    await Former(store, "chat-1", "eve").form(*ops)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve", params={"user_id": "u1"})).text
        assert "120 valid" in page and "50 of 120 facts" in page
        pages, seen = [page], set(FACT_LINK.findall(facts_section(page)))
        while (link := next_link(pages[-1])) is not None and len(pages) < 5:
            pages.append((await c.get(link)).text)
            seen |= set(FACT_LINK.findall(facts_section(pages[-1])))
        typed = (await c.get("/ui/agents/eve", params={"user_id": "u1", "offset": "100"})).text
    assert len(seen) == 120, f"{len(seen)} of the 120 facts the page counts can be opened"
    assert len(pages) == 3 and "20 of 120 facts" in pages[-1]
    newer = re.search(r'<a href="([^"]+)" rel="prev">', facts_section(pages[-1]))
    assert newer is not None  # back to the newer ones: the second page's facts
    back = (await _get(served, newer.group(1).replace("&amp;", "&"))).text
    assert FACT_LINK.findall(facts_section(back)) == FACT_LINK.findall(facts_section(pages[1]))
    assert len(FACT_LINK.findall(facts_section(typed))) == 20


async def _get(served: Served, link: str) -> Any:
    async with browser(served, served.eve) as c:
        return await c.get(link)


async def test_a_fact_deleted_on_one_page_leaves_the_next_page_whole(served: Served) -> None:
    """A person deletes a fact of the first page, then goes to the older ones: every other fact
    is listed exactly once (an offset would have skipped the first of the next page)."""
    store = served.h.store
    await record(store, "chat-1", "eve", [msg(f"m{i}", "a fact", user_id="u1") for i in range(60)])
    former = Former(store, "chat-1", "eve")
    for n in range(60):  # one formation each: each fact newer than the one before
        await former.form(add(f"f{n:03d}", f"Fact number {n:03d}", unit(1, n / 100)))
    async with browser(served, served.eve) as c:
        first = (await c.get("/ui/agents/eve", params={"user_id": "u1"})).text
        shown = FACT_LINK.findall(facts_section(first))
        await store.invalidate_fact("f059", at=datetime.now(UTC))  # the newest, on this page
        link = next_link(first)
        assert link is not None
        second = FACT_LINK.findall(facts_section((await c.get(link)).text))
    listed = [*shown, *second]
    assert len(listed) == len(set(listed)) == 60  # the deleted one was on the page already


async def test_an_offset_the_page_cannot_take_answers_its_own_error_page(served: Served) -> None:
    async with browser(served, served.eve) as c:
        r = await c.get("/ui/agents/eve", params={"offset": "-1"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("text/html")


async def test_a_users_page_lists_that_users_facts_and_the_agents_page_the_agents(
    served: Served,
) -> None:
    """60 newer agent-scope facts must not push the user's own three off the user's page."""
    store = served.h.store
    await record(store, "chat-1", "eve", [msg(f"m{i}", "hi", user_id="u1") for i in range(3)])
    former = Former(store, "chat-1", "eve")
    await former.form(
        *[add(f"u{n}", f"U1 personal fact {n}", unit(0, 1, n / 10)) for n in range(3)]
    )
    rules = [
        add(f"a{n:02d}", f"Agent rule {n:02d}", unit(1, n / 100), scope="agent") for n in range(60)
    ]
    await former.form(*rules)
    async with browser(served, served.eve) as c:
        of_u1 = facts_section((await c.get("/ui/agents/eve", params={"user_id": "u1"})).text)
        of_eve = facts_section((await c.get("/ui/agents/eve")).text)
    assert [n for n in range(3) if f"U1 personal fact {n}" in of_u1] == [0, 1, 2]
    assert "3 valid" in of_u1 and "Agent rule" not in of_u1
    assert "60 valid" in of_eve and "U1 personal" not in of_eve


async def test_a_set_aside_reflection_is_listed_however_many_are_buffered_after_it(
    served: Served,
) -> None:
    """README: a set-aside reflection is listed by the memory page, to be put back by correcting
    it, even when a consolidation failing for a while buffered many newer ones."""
    store = served.h.store
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    await record(store, "s1", "eve", [msg(f"m{i}", "hello", user_id="alice") for i in range(3)])
    former = Former(store, "s1", "eve")
    old = reflection(key, 0, "Alice once said something the provider refuses", seconds=1)
    await former.form(reflections=[old])
    assert await store.set_aside_reflection(
        key, old.reflection_id, content_hash=text_hash(old.content)
    )
    newer = [reflection(key, i, f"Alice likes thing {i}", seconds=10 + i) for i in range(1, 12)]
    await former.form(reflections=newer)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve", params={"user_id": "alice"})).text
    user_scope = page.split('id="scope-user"')[1].split("</section>")[0]
    assert old.content in user_scope and ">set aside</span>" in user_scope
    assert "the 10 newest of 11 buffered" in user_scope
    assert "Alice likes thing 11" in user_scope and "Alice likes thing 1<" not in user_scope


async def test_a_set_aside_reflection_is_listed_past_a_full_page_buffered_after_it(
    served: Served,
) -> None:
    """README: every set-aside reflection is listed, however old: even when more newer ones were
    buffered after it (a long outage, an import) than a listing page holds (MAX_PAGE)."""
    store = served.h.store
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    await record(store, "s1", "eve", [msg(f"m{i}", "hello", user_id="alice") for i in range(3)])
    former = Former(store, "s1", "eve")
    old = reflection(key, 0, "Alice once said something the provider refuses", seconds=1)
    await former.form(reflections=[old])
    assert await store.set_aside_reflection(
        key, old.reflection_id, content_hash=text_hash(old.content)
    )
    newer = [
        reflection(key, i, f"Alice likes thing {i}", seconds=10 + i) for i in range(1, MAX_PAGE + 2)
    ]
    await former.form(reflections=newer)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve", params={"user_id": "alice"})).text
    user_scope = page.split('id="scope-user"')[1].split("</section>")[0]
    assert old.content in user_scope and ">set aside</span>" in user_scope
    assert f"the 10 newest of {MAX_PAGE + 1} buffered" in user_scope
    assert f'value="Alice likes thing {MAX_PAGE + 1}"' in user_scope  # the newest buffered
    assert 'value="Alice likes thing 1"' not in user_scope  # past the newest ten


async def test_the_users_and_sessions_counts_are_the_agents_not_the_pages(served: Served) -> None:
    store = served.h.store
    for n in range(60):
        user = f"user{n:02d}"
        await record(store, f"chat-{n}", "eve", [msg("m1", "hi", user_id=user, seconds=n)])
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve")).text
    assert "<summary>Users (60)</summary>" in page and "<summary>Sessions (60)</summary>" in page
    listed = re.findall(r'<a href="/ui/agents/eve\?user_id=([^"&]+)">', page)
    assert len(listed) == 50 and listed[0] == "user59"  # the most recently active
    assert "The 50 most recently active are listed: type another user's id above." in page


async def test_every_time_on_the_fact_page_names_its_zone(served: Served) -> None:
    """Said 21:00 on a Tokyo speaker's clock beside Formed 12:01 with no zone read as formed
    nine hours before it was said."""
    store = served.h.store
    tokyo = timezone(timedelta(hours=9))
    said = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
    message = MessageIn(
        message_id="m1", role="user", user_id="u1", content="I moved to Osaka",
        created_at=said.astimezone(tokyo),
    )  # fmt: skip
    await store.record_messages("s2", "eve", [message], weights={}, chars_per_token=4.0, now=said)
    fact = add("f1", "U1 lives in Osaka", unit(1, 0))
    # builders' Former commits at 2025-01-01 12:01:40 UTC, 100 s after the message
    update = {"source_message_ids": ("m1",), "said_at": said.astimezone(tokyo)}
    await Former(store, "s2", "eve").form(fact.model_copy(update=update))
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve/facts/f1")).text
        listing = (await c.get("/ui/agents/eve", params={"user_id": "u1"})).text
    assert re.search(r'<dd id="said">2025-01-01 21:00 UTC\+09:00</dd>', page)
    assert "<dt>Formed</dt><dd>2025-01-01 12:01 UTC</dd>" in page
    assert "<dt>Updated</dt><dd>2025-01-01 12:01 UTC</dd>" in page
    assert "<td>2025-01-01 21:00 UTC+09:00</td>" in page  # the source message, its clock
    assert "<td>2025-01-01 12:01 UTC</td>" in facts_section(listing)
    assert "<td>2025-01-01 12:00 UTC</td>" in listing  # the user's last activity


async def test_more_set_aside_reflections_than_the_page_lists_are_said_to_be_more(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the page's bound of set-aside reflections, the page says it lists the newest only."""
    monkeypatch.setattr(page_view, "SET_ASIDE_SHOWN", 1)
    store = served.h.store
    key = ScopeKey(scope="user", agent_id="eve", user_id="alice")
    await record(store, "s1", "eve", [msg(f"m{i}", "hello", user_id="alice") for i in range(3)])
    refused = [reflection(key, i, f"Alice said refused thing {i}", seconds=1 + i) for i in (0, 1)]
    await Former(store, "s1", "eve").form(reflections=refused)
    for r in refused:
        assert await store.set_aside_reflection(
            key, r.reflection_id, content_hash=text_hash(r.content)
        )
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve", params={"user_id": "alice"})).text
    user_scope = page.split('id="scope-user"')[1].split("</section>")[0]
    assert "the newest 1 set aside are listed" in user_scope
    assert refused[1].content in user_scope and refused[0].content not in user_scope
