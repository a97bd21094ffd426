"""`mnemos check-model` against the fake OpenAI-compatible server: the real small model's recorded
answers (tests/realmodel) measured per step, and the exit code that says whether it works."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from tests.fake_provider_server import FakeProviderServer
from tests.realmodel.replay import Recorded, Replayer, recorded  # noqa: F401 - the fixture

runner = CliRunner()


def _env(tmp_path: Path, server: FakeProviderServer) -> dict[str, str]:
    return {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "untouched.db"),
        "MNEMOS_MODELS__PROVIDER": "openai_compatible",
        "MNEMOS_MODELS__BASE_URL": server.openai_base_url,
        "MNEMOS_EMBEDDING__PROVIDER": "local",
        "MNEMOS_LOG_LEVEL": "warning",
    }


def test_check_model_measures_each_step_and_fails_below_the_threshold(
    tmp_path: Path,
    recorded: list[Recorded],  # noqa: F811
) -> None:
    replayer = Replayer(recorded)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        result = runner.invoke(app, ["check-model", "--json"], env=_env(tmp_path, server))
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    steps = report["steps"]
    assert report["passed"] is False
    # Extraction and reflections answered schema-valid, every decision was rejected.
    assert steps["extract_facts"]["calls"] == 2 and steps["extract_facts"]["valid_rate"] == 1.0
    assert steps["extract_reflections"]["valid_rate"] == 1.0
    assert steps["decide_facts"]["calls"] >= 3 and steps["decide_facts"]["valid"] == 0
    assert steps["decide_facts"]["fallbacks"] >= 1
    assert steps["extract_facts"]["tokens_in"] > 0 and steps["extract_facts"]["tokens_out"] > 0
    assert all(t >= 0 for t in steps["extract_facts"]["latency_seconds"])
    assert any("decide_facts" in line for line in report["degraded"])
    assert not (tmp_path / "untouched.db").exists()  # a scratch store, never the configured one


def test_check_model_passes_at_a_threshold_the_model_meets(
    tmp_path: Path,
    recorded: list[Recorded],  # noqa: F811
) -> None:
    replayer = Replayer(recorded)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        result = runner.invoke(app, ["check-model", "--threshold", "0"], env=_env(tmp_path, server))
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "PASS"
    assert lines[1].startswith("decide_facts") and "valid 0/" in lines[1]
    assert "fallbacks" in lines[1] and "tokens" in lines[1] and "latency" in lines[1]
