"""The memory page's saves of a fact or a reflection that changed since the page showed it
(another tab's edit, a formation's update): refused with the text stored now, never saved over it
unseen, as the consolidated memory's save is."""

from __future__ import annotations

import html
import re

import httpx

from memory.models import ScopeKey
from memory.prompts.decide_facts import FactDecision, FactDecisions
from tests.harness import conversation, facts
from tests.serve.conftest import Served, form_alice
from tests.serve.test_page import browser

ALICE = ScopeKey(scope="user", agent_id="eve", user_id="alice")


def _form(page: str, action: str) -> dict[str, str]:
    """What the browser sends for the form posting to ``action``: its inputs' names and values."""
    form = page.split(f'action="{action}"')[1].split("</form>")[0]
    inputs = re.findall(r'<input[^>]*name="(\w+)"[^>]*value="([^"]*)"', form)
    return {name: html.unescape(value) for name, value in inputs}


async def _save(tab: httpx.AsyncClient, shown: str, action: str, text: str) -> httpx.Response:
    """The person types ``text`` in the form of the page ``shown`` and presses Save."""
    return await tab.post(action, data={**_form(shown, action), "content": text})


async def test_a_second_tab_saving_an_old_version_of_a_fact_is_refused(served: Served) -> None:
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    url = f"/ui/agents/eve/facts/{fact.fact_id}"
    async with browser(served, served.eve) as tab_a, browser(served, served.eve) as tab_b:
        page_a, page_b = (await tab_a.get(url)).text, (await tab_b.get(url)).text
        first = await _save(tab_a, page_a, f"{url}/edit", "Alice drinks oolong every morning")
        second = await _save(tab_b, page_b, f"{url}/edit", "Alice drinks black tea every morning")
    assert first.status_code == 303 and "notice=saved" in first.headers["location"]
    assert second.status_code == 409, second.text
    # The refusal says why and shows what tab A stored, and tab B's own text is not lost.
    said = html.unescape(second.text)
    assert "Not saved" in said and "version 2, not 1" in said
    assert "Alice drinks oolong every morning" in said
    assert "Alice drinks black tea every morning" in said
    [now] = await served.h.store.get_facts([fact.fact_id])
    assert (now.version, now.content) == (2, "Alice drinks oolong every morning")


async def test_saving_an_open_fact_page_keeps_a_formations_update(served: Served) -> None:
    h = served.h
    await h.record("s0", conversation(4, prefix="a"))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics", "user"), sources=[1]))
    async with h.worker():
        await h.form("s0")
    [fact] = await h.all_facts()
    url = f"/ui/agents/eve/facts/{fact.fact_id}"
    async with browser(served, served.eve) as tab:
        shown = (await tab.get(url)).text
        # Meanwhile the conversation goes on, and its formation updates the fact.
        await h.record("s1", conversation(4))
        cto = "Alice works at Acme Robotics as CTO"
        h.llm.script("extract_facts", facts((cto, "user"), sources=[1]))
        update = FactDecision(new_fact_index=0, event="UPDATE", existing_index=0, merged_text=cto)
        h.llm.defaults["decide_facts"] = lambda _: FactDecisions(decisions=[update])
        async with h.worker():
            await h.form("s1")
        # The person corrects the spelling of the version they saw.
        r = await _save(tab, shown, f"{url}/edit", "Alice works at ACME Robotics")
    assert r.status_code == 409 and cto in html.unescape(r.text)
    [now] = await h.all_facts()
    assert (now.version, now.content) == (2, cto)


async def test_a_second_tab_saving_an_old_reflection_text_is_refused(served: Served) -> None:
    await form_alice(served.h)
    [refl] = await served.h.store.list_reflections(ALICE)
    action = f"/ui/agents/eve/reflections/{refl.reflection_id}/edit"
    async with browser(served, served.eve) as tab_a, browser(served, served.eve) as tab_b:
        page_a = (await tab_a.get("/ui/agents/eve", params={"user_id": "alice"})).text
        page_b = (await tab_b.get("/ui/agents/eve", params={"user_id": "alice"})).text
        first = await _save(tab_a, page_a, action, "Alice gets up at six")
        second = await _save(tab_b, page_b, action, "Alice is a morning person who runs")
        # Saving the text the page shows now is a correction of what is stored: it is saved.
        again = (await tab_b.get("/ui/agents/eve", params={"user_id": "alice"})).text
        third = await _save(tab_b, again, action, "Alice gets up at six and runs")
    assert first.status_code == 303
    assert second.status_code == 409, second.text
    said = html.unescape(second.text)
    assert "Alice gets up at six" in said and "Alice is a morning person who runs" in said
    assert third.status_code == 303
    [now] = await served.h.store.list_reflections(ALICE)
    assert now.content == "Alice gets up at six and runs"
