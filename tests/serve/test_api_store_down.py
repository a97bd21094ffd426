"""The API while its PostgreSQL store is down (a real server, stopped): a keyed request answers a
prompt 503 `unavailable` ("retry later"), as /readyz already says, not a 500 "internal error"
after a minute (psycopg_pool's 30 s for a connection, waited twice)."""

from __future__ import annotations

import time

import pytest

from memory.store.outage import CONNECT_TIMEOUT_SECONDS
from tests.postgres_server import PostgresServer
from tests.serve.conftest import Served
from tests.store.builders import msg, record


@pytest.mark.postgres
@pytest.mark.parametrize("store_backend", ["postgres"], indirect=True)
async def test_a_request_answers_503_promptly_while_the_store_is_down(
    store_backend: str, served: Served, postgres_server: PostgresServer | None
) -> None:
    if postgres_server is None:
        pytest.skip("POSTGRES_DSN names a server this test may not stop")
    await record(served.h.store, "s1", "eve", [msg("m1", "hello", user_id="u")])
    context = "/v1/agents/eve/sessions/s1/context"
    async with served.client(served.eve) as c:
        assert (await c.get(context, params={"user_id": "u"})).status_code == 200
        postgres_server.stop()  # the store goes away (a crash, a failover)
        try:
            started = time.monotonic()
            down = await c.get(context, params={"user_id": "u"})
            took = time.monotonic() - started
        finally:
            postgres_server.start()
        again = await c.get(context, params={"user_id": "u"})
    problem = down.json()
    assert (down.status_code, problem["type"]) == (503, "urn:mnemos:problem:unavailable"), down.text
    assert problem["detail"] == "the memory store cannot be reached; retry later"  # no driver text
    # One wait for a connection, not a second one after it (nor psycopg_pool's 30 s each).
    assert took < 2 * CONNECT_TIMEOUT_SECONDS, f"answered after {took:.1f} s"
    assert again.status_code == 200  # the same request once the store is back
