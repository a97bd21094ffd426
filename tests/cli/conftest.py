"""Commands run in-process (CliRunner) configure logging onto the runner's stderr, which is closed
when the command returns: a later warning from a worker in another test would then fail its
activity ("I/O operation on closed file"). Each CLI test leaves logging as it found it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)
