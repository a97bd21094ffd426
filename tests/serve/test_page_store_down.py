"""The memory page while its PostgreSQL store is down (a real server, stopped): a person gets the
page's own HTML error page saying to retry later (503), not the API's JSON problem."""

from __future__ import annotations

import pytest

from tests.postgres_server import PostgresServer
from tests.serve.conftest import Served
from tests.serve.test_page import browser
from tests.store.builders import msg, record


@pytest.mark.postgres
@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
async def test_the_page_answers_its_own_page_when_the_store_is_down(
    store_backend: str, served: Served, postgres_server: PostgresServer | None
) -> None:
    if postgres_server is None:
        pytest.skip("POSTGRES_DSN names a server this test may not stop")
    await record(served.h.store, "s1", "eve", [msg("m1", "hello", user_id="alice")])
    async with browser(served, served.eve) as c:
        assert (await c.get("/ui/agents/eve")).status_code == 200
        postgres_server.stop()
        try:
            page = await c.get("/ui/agents/eve", params={"user_id": "alice"})
        finally:
            postgres_server.start()
        again = await c.get("/ui/agents/eve", params={"user_id": "alice"})
    assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
    assert (
        "cannot be reached; retry later." in page.text
        and page.headers["cache-control"] == "no-store"
    )
    assert again.status_code == 200  # the same page once the store is back
