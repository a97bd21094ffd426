"""Bad input to `mnemos consolidated|stats|degraded reform`: one `error:` line, exit code 1, no
traceback, and nothing changed (README "Operators")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from memory.models import AgentConfig, ScopeKey
from memory.store.sqlite import SQLiteStore
from tests.cli.conftest import free_port
from tests.cli_lines import one_error_line

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A store holding the registered agent a1 (and nothing else); no Temporal."""
    path = tmp_path / "mnemos.db"

    async def register() -> None:
        store = SQLiteStore(path)
        try:
            await store.setup()
            await store.upsert_agent(AgentConfig(agent_id="a1", name="Eve"))
        finally:
            await store.close()

    asyncio.run(register())
    return {
        "MNEMOS_STORE__SQLITE_PATH": str(path),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }


def _blob_version(env: dict[str, str]) -> int:
    async def version() -> int:
        store = SQLiteStore(Path(env["MNEMOS_STORE__SQLITE_PATH"]))
        try:
            blob = await store.get_consolidated(ScopeKey.agent("a1"))
            return 0 if blob is None else blob.version
        finally:
            await store.close()

    return asyncio.run(version())


def test_consolidated_edit_of_a_file_that_is_not_utf8(env: dict[str, str], tmp_path: Path) -> None:
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe")
    args = ["consolidated", "edit", "a1", "--file", str(binary)]
    line = one_error_line(runner.invoke(app, args, env=env))
    assert line.startswith(f"error: cannot read {binary}: not UTF-8 text")
    assert _blob_version(env) == 0


def test_consolidated_show_of_an_unregistered_agent(env: dict[str, str]) -> None:
    line = one_error_line(runner.invoke(app, ["consolidated", "show", "nope"], env=env))
    assert line == "error: agent 'nope' is not registered"
    # A registered agent without a blob yet: exit code 2, as before.
    empty = runner.invoke(app, ["consolidated", "show", "a1"], env=env)
    assert empty.exit_code == 2 and "has no consolidated memory yet" in empty.stderr


def test_consolidated_edit_refuses_a_negative_expected_version(env: dict[str, str]) -> None:
    args = ["consolidated", "edit", "a1", "--expected-version", "-3", "New text."]
    line = one_error_line(runner.invoke(app, args, env=env))
    assert "--expected-version" in line and "reload" not in line
    assert _blob_version(env) == 0


def test_stats_with_an_invalid_user_id_is_one_line(env: dict[str, str]) -> None:
    line = one_error_line(runner.invoke(app, ["stats", "a1", "--user", "é"], env=env))
    assert "'é'" in line or "user_id" in line


def test_degraded_reform_refuses_an_empty_range_up_front(env: dict[str, str]) -> None:
    args = ["degraded", "reform", "a1", "s1", "--after", "5", "--upto", "2"]
    result = runner.invoke(app, args, env=env)
    line = one_error_line(result)
    assert "--after" in line and "re-forming" not in result.output
