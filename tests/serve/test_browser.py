"""The memory page in a real browser: Debian's chromium driven by Playwright, against the app
served by uvicorn on a loopback port. Skipped, with the reason, where chromium is absent."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import AsyncIterator
from pathlib import Path

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
