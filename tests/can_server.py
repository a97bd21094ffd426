"""A dev server of its own that suggests continue-as-new after a few history events: a drain
continues as new after every pass, as a long backlog's does after thousands of events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from runtime.payloads import payload_data_converter


@asynccontextmanager
async def continuing_as_new(events: int = 10) -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        data_converter=payload_data_converter,
        dev_server_extra_args=[
            "--ui-disable-news-fetch",
            "--dynamic-config-value",
            f"limit.historyCount.suggestContinueAsNew={events}",
        ],
    )
    try:
        yield env
    finally:
        await env.shutdown()
