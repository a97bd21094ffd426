"""A beater repeats what its attempt last recorded, not what the attempt started with: Temporal
keeps an attempt's last heartbeat only, and the next attempt reads it (why an answer was
rejected, what the attempts paid for)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any

from temporalio.testing import ActivityEnvironment

from activities import beats
from activities.heartbeat import heartbeating


async def test_a_beat_after_a_record_repeats_the_record() -> None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, heartbeat_timeout=timedelta(seconds=0.3), heartbeat_details=["earlier", 1]
    )
    sent: list[tuple[Any, ...]] = []
    beaten = asyncio.Event()

    def heartbeat(*details: Any) -> None:
        sent.append(details)
        if len(sent) >= 2:  # the record, then a beater's beat after it
            beaten.set()

    env.on_heartbeat = heartbeat

    async def attempt() -> None:
        beats.send("rejected: not JSON", 2, [["extract_facts", "p", "m", 9, 3]])
        await beaten.wait()  # the model's next call: the beater beats meanwhile

    async def run() -> None:
        await heartbeating(attempt())

    await asyncio.wait_for(env.run(run), timeout=10)
    record = ("rejected: not JSON", 2, [["extract_facts", "p", "m", 9, 3]])
    assert sent[0] == record and sent[-1] == record
