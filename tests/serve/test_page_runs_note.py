"""The agent page's "Recent formation runs" when Temporal cannot be reached: the page still
answers, with a note that says so, and the transport's error text (its address, the OS error) is
the server log's, not shown to whoever holds a key (as the API answers it: serve/errors.py)."""

from __future__ import annotations

import socket

import pytest
import structlog
from structlog.testing import capture_logs
from temporalio.client import Client

from serve import runs as serve_runs
from tests.serve.conftest import Served, form_alice
from tests.serve.test_page import browser


def _closed_port() -> int:
    """A port nothing listens on: connecting to it is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_temporal_unreachable_is_a_plain_note_and_its_detail_is_logged(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    await form_alice(served.h)
    address = f"127.0.0.1:{_closed_port()}"
    served.h.memory.temporal = await Client.connect(address, lazy=True)
    with capture_logs() as logs:
        # A logger another test used is cached with the configuration of then (memory/logging.py
        # caches on first use), which capture_logs does not reach: this one is made under it.
        monkeypatch.setattr(serve_runs, "log", structlog.get_logger("serve.runs"))
        async with browser(served, served.eve) as c:
            page = await c.get("/ui/agents/eve", params={"user_id": "alice"})
    assert page.status_code == 200
    runs = page.text.split('<section id="runs">')[1].split("</section>")[0]
    assert "formation runs are not listed: Temporal is unreachable" in runs
    assert address not in runs and "onnect" not in runs, runs
    [logged] = [e for e in logs if e["event"] == "formation runs not listed"]
    assert address in logged["error"] and logged["agent_id"] == "eve"
