"""The memory page in a real browser: Debian's chromium driven by Playwright, against the app
served by uvicorn on a loopback port. Skipped, with the reason, where chromium is absent."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from tests.serve.conftest import Served, form_alice

CHROMIUM = os.environ.get("MNEMOS_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"no chromium at {CHROMIUM} (apt-get install -y chromium as root)",
)


@pytest.fixture
async def base_url(served: Served) -> AsyncIterator[str]:
    # The socket is bound before the server starts: the browser's first connection waits in
    # the listen backlog instead of racing the start-up.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(served.app, log_config=None, access_log=False, lifespan="off")
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


def artifacts(tmp_path: Path) -> Path:
    where = os.environ.get("MNEMOS_TEST_ARTIFACTS")
    path = Path(where) if where else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


async def test_sign_in_find_a_fact_edit_it_and_see_its_history(
    served: Served, base_url: str, tmp_path: Path
) -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    await form_alice(served.h)
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page(viewport={"width": 1200, "height": 1000})
            await page.goto(f"{base_url}/ui")
            assert page.url.endswith("/ui/login")  # not signed in yet

            await page.fill("input[name=api_key]", "mk_wrong_key")
            await page.click("button[type=submit]")
            assert await page.locator(".error").inner_text() == "Unknown or revoked key."

            await page.fill("input[name=api_key]", served.eve)
            await page.click("button[type=submit]")
            await page.click("text=Eve")
            await page.click("nav.scopes >> text=alice")
            assert "user_id=alice" in page.url

            await page.fill("input[name=q]", "Alice drinks green tea every morning")
            await page.click("#search button")
            row = page.locator("table.ranking tbody tr").first
            assert "Alice drinks green tea every morning" in await row.inner_text()
            cells = await row.locator("td").all_inner_texts()
            assert cells[5] != "–"  # the vector score is shown next to the fused ones

            await page.click("#facts >> text=Alice drinks green tea every morning")
            assert await page.locator("#version").inner_text() == "1"
            await page.fill("input[name=content]", "Alice drinks oolong every morning")
            await page.click("text=Save new version")

            notice = page.locator(".notice")
            assert await notice.inner_text() == "Saved as a new version."
            assert await page.locator("#content").inner_text() == (
                "Alice drinks oolong every morning"
            )
            assert await page.locator("#version").inner_text() == "2"
            history = await page.locator("table.history tbody").inner_text()
            assert history.startswith("v1\tAlice drinks green tea every morning"), history
            shot = artifacts(tmp_path) / "memory-page-fact-history.png"
            await page.screenshot(path=str(shot), full_page=True)
            print(f"screenshot: {shot}")
            assert shot.stat().st_size > 10_000
        finally:
            await browser.close()
    facts = await served.h.all_facts()
    assert "Alice drinks oolong every morning" in [f.content for f in facts]


async def sign_in(page: Any, base_url: str, key: str) -> None:
    await page.goto(f"{base_url}/ui/login")
    await page.fill("input[name=api_key]", key)
    await page.click("button[type=submit]")
    await page.wait_for_url(f"{base_url}/ui")


def other_origin(base_url: str) -> str:
    """The same host on another port: the same site, so the SameSite=Strict cookie goes along."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert not base_url.endswith(f":{port}")
    return f"http://127.0.0.1:{port}"


def auto_post(action: str, fields: dict[str, str]) -> str:
    inputs = "".join(f'<input type="hidden" name="{k}" value="{v}">' for k, v in fields.items())
    return (
        f'<!doctype html><body onload="document.forms[0].submit()">'
        f'<form method="post" action="{action}">{inputs}</form></body>'
    )


async def test_a_page_on_another_port_of_the_host_cannot_write(
    served: Served, base_url: str
) -> None:
    """The attack SameSite=Strict lets through: a page on 127.0.0.1:<other port> (served here by
    the browser's own request interception) auto-submits forms to the memory page."""
    playwright_api = pytest.importorskip("playwright.async_api")
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    evil = other_origin(base_url)
    forms = {
        "/edit.html": auto_post(
            f"{base_url}/ui/agents/eve/facts/{fact.fact_id}/edit", {"content": "Hacked"}
        ),
        "/delete.html": auto_post(f"{base_url}/ui/agents/eve/facts/{fact.fact_id}/delete", {}),
        "/login.html": auto_post(f"{base_url}/ui/login", {"api_key": served.bob}),
    }

    async def serve_evil(route: Any) -> None:
        path = "/" + route.request.url.split("/", 3)[3]
        await route.fulfill(status=200, content_type="text/html", body=forms[path])

    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            context = await browser.new_context()
            await context.route(f"{evil}/**", serve_evil)
            page = await context.new_page()
            await sign_in(page, base_url, served.eve)
            for path in ("/edit.html", "/delete.html"):
                async with page.expect_response(lambda r: r.request.method == "POST") as posted:
                    await page.goto(evil + path)
                response = await posted.value
                assert response.status == 403, (path, response.status)
                assert "not sent from this page" in await page.inner_text("main")
            await context.close()

            # Nor may it sign a visitor in with the attacker's key.
            context = await browser.new_context()
            await context.route(f"{evil}/**", serve_evil)
            page = await context.new_page()
            async with page.expect_response(lambda r: r.request.method == "POST") as posted:
                await page.goto(evil + "/login.html")
            assert (await posted.value).status == 403
            assert await context.cookies() == []
            await context.close()
        finally:
            await browser.close()
    assert (await served.h.store.get_facts([fact.fact_id]))[0] == fact


async def test_a_long_word_keeps_the_page_within_the_screen(served: Served, base_url: str) -> None:
    """A word of 380 characters, on a desktop and on a phone: it wraps, the document is no
    wider than the viewport (a table too wide for a phone scrolls inside its own box)."""
    playwright_api = pytest.importorskip("playwright.async_api")
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    long_word = "Alice's key is " + "x" * 380
    async with served.client(served.eve) as api:
        r = await api.patch(f"/v1/agents/eve/facts/{fact.fact_id}", json={"content": long_word})
        assert r.status_code == 200
    urls = [
        f"/ui/agents/eve/facts/{fact.fact_id}",
        "/ui/agents/eve?user_id=alice&session_id=s1&q=Alice+key",
    ]
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for width, height in ((1200, 900), (390, 844)):
                page = await browser.new_page(viewport={"width": width, "height": height})
                await sign_in(page, base_url, served.eve)
                for url in urls:
                    await page.goto(base_url + url)
                    assert "x" * 380 in await page.inner_text("main"), url
                    wide = await page.evaluate("document.documentElement.scrollWidth")
                    assert wide <= width, (url, width, wide)
                await page.goto(base_url + urls[0])
                said = "getComputedStyle(document.querySelector('#sources td.said')).whiteSpace"
                assert await page.evaluate(said) == "pre-wrap"  # a message keeps its lines
                await page.close()
        finally:
            await browser.close()


async def test_after_signing_out_back_shows_no_memory(served: Served, base_url: str) -> None:
    playwright_api = pytest.importorskip("playwright.async_api")
    await form_alice(served.h)
    fact = next(f for f in await served.h.all_facts() if f.scope == "user")
    async with playwright_api.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = await browser.new_page()
            await sign_in(page, base_url, served.eve)
            await page.goto(f"{base_url}/ui/agents/eve/facts/{fact.fact_id}")
            assert fact.content in await page.inner_text("main")
            await page.click("text=Sign out")
            await page.wait_for_url(f"{base_url}/ui/login")
            await page.go_back()
            await page.wait_for_load_state()
            assert fact.content not in await page.content()
            assert page.url.endswith("/ui/login")
        finally:
            await browser.close()
