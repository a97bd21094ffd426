"""A setting pydantic-settings cannot even parse (a structured variable that is no JSON) is one
line naming the field and variable, like an invalid one: never a traceback, never the value."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from tests.cli.conftest import free_port

runner = CliRunner()


def test_a_structured_setting_that_is_not_json_is_one_line_naming_it(tmp_path: Path) -> None:
    secret = "notjson-but-maybe-a-secret-4711"
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
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
