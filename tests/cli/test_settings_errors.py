"""A setting pydantic-settings cannot even parse (a structured variable that is no JSON) is one
line naming the field and variable, like an invalid one: never a traceback, never the value."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.ops import store_location
from memory.settings import Settings, StoreSettings
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


def _mnemos(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The command as an operator runs it (its entry point, not the runner: the commands of
    serve/ and runtime/ read their settings outside cli.common)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOS_")}
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        env=clean | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# One command of each package that reads its own settings (serve/, runtime/).
@pytest.mark.parametrize("command", [["keys", "list"], ["codec-server"]])
def test_invalid_settings_are_one_line_without_the_secrets_beside_them(
    tmp_path: Path, command: list[str]
) -> None:
    dsn_password, codec_key = "S3cretPW-0815", base64.b64encode(bytes(range(32))).decode()
    env = {
        "MNEMOS_STORE__BACKEND": "postgres",
        "MNEMOS_STORE__POSTGRES_DSN": f"postgresql://mnemos:{dsn_password}@db/mnemos",
        "MNEMOS_CODEC__KEY": codec_key,
        "MNEMOS_RAG__TOP_K_MIN": "20",  # above the default top_k: invalid
    }

    result = _mnemos(command, env)

    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: invalid settings:"), result.stderr
    assert "top_k_min" in lines[0]
    out = result.stdout + result.stderr
    assert dsn_password not in out and codec_key[8:40] not in out


def test_a_dsn_the_driver_cannot_parse_is_one_line_without_its_password(tmp_path: Path) -> None:
    env = {
        "MNEMOS_STORE__BACKEND": "postgres",
        "MNEMOS_STORE__POSTGRES_DSN": "postgresql//mnemos:S3cretPW-0815@db/mnemos",  # no ":"
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
    }

    result = runner.invoke(app, ["setup"], env=env)

    assert result.exit_code == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: store (postgres): "), result.stderr
    assert "S3cretPW" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("password", "quoted"),
    [
        ("S3cr%t-pw", "S3cr%t-pw"),  # 'invalid percent-encoded token: "S3cr%t-pw"'
        ("Pa ssWORD9", "ssWORD9"),  # 'unexpected spaces found in "Pa ssWORD9"'
        ("Pa@ssWORD9", "ssWORD9"),  # "failed to resolve host 'ssWORD9@127.0.0.1'"
    ],
)
def test_a_password_the_driver_quotes_is_redacted(password: str, quoted: str) -> None:
    """A generated password with a character URIs reserve: the driver quotes the token it could
    not parse, which the URI pattern of the log redaction misses (review H129)."""
    env = {
        "MNEMOS_STORE__BACKEND": "postgres",
        "MNEMOS_STORE__POSTGRES_DSN": f"postgresql://admin:{password}@127.0.0.1:1/db",
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
    }

    result = runner.invoke(app, ["setup"], env=env)

    assert result.exit_code == 1 and "error: store (postgres): " in result.stderr
    assert quoted not in result.stdout + result.stderr, result.stderr


def test_setup_says_which_postgres_it_set_up_without_its_password() -> None:
    store = StoreSettings(backend="postgres", postgres_dsn="postgresql://mn:S3cret@db:5432/mem")
    assert store_location(Settings(store=store)) == "postgresql://[redacted]@db:5432/mem"
