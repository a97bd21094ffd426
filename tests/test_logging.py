"""Logs are JSON lines with the ids bound, and never carry a secret."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
import structlog

from memory.logging import configure_logging, get_logger


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put logging back after the test: a logger left writing to the test's closed capture stream
    would break every later test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        structlog.reset_defaults()
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_json_lines_with_ids_and_no_secrets(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info")  # here, so that it writes to this test's captured stderr
    get_logger(agent_id="eve", session_id="s1").info(
        "connected",
        api_key="sk-live-123",
        mongodb_uri="mongodb+srv://admin:hunter2@cluster0.example.net/mnemos",
        note="see mongodb://bob:pw@db.local:27017",
        input_tokens=42,
    )
    line = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert (line["event"], line["agent_id"], line["session_id"], line["level"]) == (
        "connected",
        "eve",
        "s1",
        "info",
    )
    assert line["api_key"] == "[redacted]" and line["mongodb_uri"] == "[redacted]"
    assert "pw@" not in line["note"] and "[redacted]@db.local" in line["note"]
    assert line["input_tokens"] == 42  # a count is not a secret
    assert "sk-live-123" not in json.dumps(line) and "hunter2" not in json.dumps(line)
