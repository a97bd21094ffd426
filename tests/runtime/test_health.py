"""The worker's /healthz: answered by its event loop, so a stuck loop fails the probe, which
/metrics (served by the SDK's Rust core) never does."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from runtime.health import serving_health


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _get(url: str, timeout: float) -> int:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        status: int = r.status
        return status


async def test_healthz_answers_while_the_loop_turns_and_not_when_it_is_stuck() -> None:
    bind = f"127.0.0.1:{_free_port()}"
    async with serving_health(bind):
        assert await asyncio.to_thread(_get, f"http://{bind}/healthz", 5) == 200
        with pytest.raises(urllib.error.HTTPError) as other:
            await asyncio.to_thread(_get, f"http://{bind}/metrics", 5)
        assert other.value.code == 404

        stuck = threading.Event()
        outcome: list[BaseException] = []

        def probe() -> None:
            stuck.wait()
            try:
                _get(f"http://{bind}/healthz", 0.5)
            except OSError as e:  # no answer in time: what a stuck loop gives
                outcome.append(e)

        prober = threading.Thread(target=probe)
        prober.start()
        stuck.set()
        time.sleep(2)  # the loop is stuck (a blocking call in an activity, say)
        prober.join()
        assert outcome and "timed out" in str(outcome[0])
        # Unstuck, it answers again.
        assert await asyncio.to_thread(_get, f"http://{bind}/healthz", 5) == 200
