"""What the schedule tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.client import Client

from memory.settings import Settings
from runtime.schedule import schedule_id


@pytest.fixture
async def cleanup() -> AsyncIterator[list[tuple[Client, Settings]]]:
    """Schedules to delete after the test, so none keeps firing at a queue nobody polls."""
    schedules: list[tuple[Client, Settings]] = []
    yield schedules
    for client, settings in schedules:
        await client.get_schedule_handle(schedule_id(settings)).delete()
