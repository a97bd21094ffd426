"""What every CLI test shares: logging configured outside the runner, and a free port."""

from __future__ import annotations

import socket

import pytest

from cli import common as cli_common
from memory.logging import configure_logging


@pytest.fixture(autouse=True)
def _logging_outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI points logging at the stderr it sees, which under the runner is a buffer closed
    after the call, where later log lines of other tests would land. Configure it once here."""
    configure_logging("warning")
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
