"""What the benches share: a dev server as `make run` starts it (file database with WAL pragmas)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from temporalio.common import SearchAttributeKey
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli


@contextlib.asynccontextmanager
async def dev_server(
    data_dir: Path, *, search_attributes: Sequence[SearchAttributeKey[str]] = ()
) -> AsyncIterator[WorkflowEnvironment]:
    """On a free port; ``search_attributes`` registered before the first workflow starts."""
    env = await WorkflowEnvironment.start_local(
        search_attributes=search_attributes,
        dev_server_existing_path=str(temporal_cli()),
        data_converter=pydantic_data_converter,
        dev_server_database_filename=str(data_dir / "temporal.db"),
        dev_server_extra_args=[
            "--sqlite-pragma",
            "journal_mode=wal",
            "--sqlite-pragma",
            "synchronous=1",
        ],
    )
    try:
        yield env
    finally:
        await env.shutdown()
