"""A person's edit changes a fact's text, not where it was said: the edited fact keeps the sources
of the version it replaced, and the memory page says that those messages said that version, not
the edited text. Over HTTP the fact's history tells the same (README "Use it over HTTP")."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from memory.formation_commit import FactUpdate
from memory.models import MessageIn
from tests.serve.conftest import Served, form_alice
from tests.serve.test_page import browser
from tests.store.builders import Former, add, at, msg, record, unit

EDITED = "Alice drinks black coffee every evening"


async def test_the_page_of_a_fact_edited_by_hand_says_its_messages_said_the_version_before(
    served: Served,
) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with browser(served, served.eve) as c:
        formed = (await c.get(f"/ui/agents/eve/facts/{fact.fact_id}")).text
        page = (
            await c.post(
                f"/ui/agents/eve/facts/{fact.fact_id}/edit",
                data={"content": EDITED},
                follow_redirects=True,
            )
        ).text
    assert 'id="edited"' not in formed

    assert f'<dd id="content" dir="auto">{EDITED}</dd>' in page
    edited = page.split('<p class="hint" id="edited">')[1].split("</p>")[0]
    assert "This text was edited by hand on " in edited
    assert "nobody said it in these messages" in edited
    assert f'They said version 1, <q dir="auto">{fact.content}</q>' in edited
    assert "(version 1, before the edit)</dd>" in page.split('id="said"')[1]
    sources = page.split('id="sources"')[1].split("</table>")[0]
    assert "message 0 from the user" in sources  # still shown, under that sentence

    # The API: the revision of the version before cites the same formation (a formed version
    # cites its own), with the edit's time and reason.
    async with served.client(served.eve) as api:
        got = (await api.get(f"/v1/agents/eve/facts/{fact.fact_id}")).json()
    last = got["history"][-1]
    assert (got["content"], got["version"], last["version"]) == (EDITED, 2, 1)
    assert last["formation_id"] == got["formation_id"] == fact.formation_id
    assert last["source_message_ids"] == got["source_message_ids"]
    assert last["reason"] == "manual edit"

    # Edited again: the messages still said version 1.
    async with browser(served, served.eve) as c:
        again = (
            await c.post(
                f"/ui/agents/eve/facts/{fact.fact_id}/edit",
                data={"content": "Alice drinks tea at noon"},
                follow_redirects=True,
            )
        ).text
    assert f'They said version 1, <q dir="auto">{fact.content}</q>' in again


async def test_a_version_formed_from_new_messages_is_not_called_an_edit(served: Served) -> None:
    store = served.h.store
    await record(store, "s1", "eve", [msg("m1", "I live in Paris", seconds=10)])
    paris = add("f1", "Alice lives in Paris", unit(1, 0))
    await Former(store, "s1", "eve").form(
        paris.model_copy(update={"source_message_ids": ("m1",), "said_at": at(10)})
    )
    await record(store, "s1", "eve", [msg("m2", "I moved to Berlin", seconds=500)])
    berlin = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Berlin", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m2",), said_at=at(500),
    )  # fmt: skip
    former = Former(store, "s1", "eve")
    former.cursor = 1
    await former.form(berlin)
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve/facts/f1")).text
    assert '<dd id="version">2</dd>' in page
    assert 'id="edited"' not in page and "before the edit" not in page
    assert "I moved to Berlin" in page.split('id="sources"')[1].split("</table>")[0]


async def test_the_page_shows_when_a_fact_was_said_on_its_speakers_clock(served: Served) -> None:
    store = served.h.store
    chicago = timezone(timedelta(hours=-5))
    said = datetime(2024, 5, 8, 3, 30, tzinfo=UTC)  # 22:30 on 7 May in Chicago
    await store.record_messages(
        "s2", "eve",
        [MessageIn(message_id="m1", role="user", user_id="u1", content="I am flying to Paris tomorrow",
                   created_at=said.astimezone(chicago))],
        weights={}, chars_per_token=4.0, now=said,
    )  # fmt: skip
    trip = add("f1", "Alice is flying to Paris on 8 May 2024", unit(1, 0))
    await Former(store, "s2", "eve").form(
        trip.model_copy(update={"source_message_ids": ("m1",), "said_at": said.astimezone(chicago)})
    )
    async with browser(served, served.eve) as c:
        page = (await c.get("/ui/agents/eve/facts/f1")).text
    assert '<dd id="said">2024-05-07 22:30 UTC-05:00</dd>' in page
    # Its message's time on the same clock, not the UTC one beside it.
    sources = page.split('id="sources"')[1].split("</table>")[0]
    assert "2024-05-07 22:30 UTC-05:00" in sources and "2024-05-08 03:30" not in sources
