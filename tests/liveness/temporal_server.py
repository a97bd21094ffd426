"""A Temporal dev server that a test can stop and start again on the same port and database."""

from __future__ import annotations

import socket
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from runtime.payloads import payload_data_converter


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class RestartableServer:
    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.database = directory / "temporal.db"
        self.env: WorkflowEnvironment | None = None

    async def start(self) -> WorkflowEnvironment:
        self.env = await WorkflowEnvironment.start_local(
            port=self.port,
            data_converter=payload_data_converter,
            dev_server_existing_path=str(temporal_cli()),
            dev_server_database_filename=str(self.database),
            dev_server_extra_args=["--ui-disable-news-fetch"],
        )
        return self.env

    async def stop(self) -> None:
        if self.env is not None:
            await self.env.shutdown()
            self.env = None
