"""`mnemos up`'s API: served on a real port over the demo's client, with a development key that
a second run finds again in the data dir."""

from __future__ import annotations

import socket
from pathlib import Path

import httpx

from cli.demo_api import DEV_KEY_FILE, serving_api
from tests.serve.conftest import Served


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_up_serves_the_api_with_a_development_key_kept_for_the_next_run(
    served: Served, tmp_path: Path
) -> None:
    port = _free_port()
    async with serving_api(served.memory, tmp_path, agent_id="eve", port=port) as api:
        assert api.url == f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {api.token}"}
        async with httpx.AsyncClient(base_url=api.url, headers=headers) as c:
            assert (await c.get("/v1/agents/eve")).status_code == 200
            assert (await c.get("/v1/agents/bob")).status_code == 403
            assert (await c.get("/ui/login")).status_code == 200
        first = api.token
    assert (tmp_path / DEV_KEY_FILE).stat().st_mode & 0o077 == 0
    assert first not in (await served.keys.list())[-1].model_dump_json()

    async with serving_api(served.memory, tmp_path, agent_id="eve", port=port) as api:
        assert api.token == first
        announced = api.announcement("eve", "s1", "alice")
    assert f"http://127.0.0.1:{port}/v1/agents/eve/sessions/s1/context?user_id=alice" in announced
    assert first in announced


async def test_a_revoked_development_key_is_replaced(served: Served, tmp_path: Path) -> None:
    async with serving_api(served.memory, tmp_path, agent_id="eve", port=0) as api:
        first = api.token
    key = await served.keys.verify(first)
    assert key is not None
    await served.keys.revoke(key.key_id)

    async with serving_api(served.memory, tmp_path, agent_id="eve", port=0) as api:
        assert api.url is None and "turned off" in api.note
        assert api.token != first and await served.keys.verify(api.token) is not None
    assert (tmp_path / DEV_KEY_FILE).read_text().strip() == api.token


async def test_a_taken_port_is_reported_not_fatal(served: Served, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with serving_api(served.memory, tmp_path, agent_id="eve", port=port) as api:
            assert api.url is None
            assert f"port {port} is taken" in api.announcement("eve", "s1", None)
