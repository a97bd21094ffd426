"""A setting pydantic-settings cannot even parse (a structured variable that is no JSON) is one
line naming the field and variable, like an invalid one: never a traceback, never the value."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli import common as cli_common
from cli.app import app
from memory.logging import configure_logging

runner = CliRunner()


@pytest.fixture(autouse=True)
def _logging_outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    configure_logging("warning")
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_structured_setting_that_is_not_json_is_one_line_naming_it(tmp_path: Path) -> None:
    secret = "notjson-but-maybe-a-secret-4711"
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{_free_port()}",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
        "MNEMOS_CODEC__SERVER_ORIGINS": secret,
    }

    result = runner.invoke(app, ["stats", "eve"], env=env)

    assert result.exit_code == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid settings: codec"), result.stderr
    assert "MNEMOS_CODEC__SERVER_ORIGINS" in lines[0] and "JSON" in lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert secret not in result.stdout + result.stderr
