"""`mnemos check-model` against the fake OpenAI-compatible server serving a real small model's
recorded answers (tests/realmodel): per step calls, validity and verdict, the fixed cases, and
the exit code that says whether the model qualifies."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from cli.check_model import Qualification, _verdicts
from memory.model_check import CheckReport
from memory.model_check_record import CallRecord
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


def test_answers_that_loop_fail_the_decision_step_and_the_check(
    tmp_path: Path,
    recorded: list[Recorded],  # noqa: F811
) -> None:
    """The older prompts' answers: every decision looped inside its text (cut while streaming)."""
    replayer = Replayer(recorded)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        result = runner.invoke(
            app, ["check-model", "--json", "--record", str(tmp_path / "rec")],
            env=_env(tmp_path, server),
        )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    report = json.loads(result.stdout)
    steps = report["steps"]
    assert report["passed"] is False
    assert report["structured_output"] == {
        "server": "json_schema", "note": "the server enforces json_schema", "used": "json_schema"
    }  # fmt: skip
    assert steps["decide_facts"]["calls"] >= 3 and steps["decide_facts"]["valid"] == 0
    assert steps["decide_facts"]["verdict"].startswith("FAIL")
    assert steps["extract_facts"]["valid"] >= 2 and steps["extract_facts"]["tokens_in"] > 0
    assert [c["name"] for c in report["cases"]] == [
        "duplicate", "correction", "new fact", "relative date", "user vs agent scope",
        "consolidation",
    ]  # fmt: skip
    assert not any(c["passed"] for c in report["cases"] if c["step"] == "decide_facts")
    # Every call recorded, the invalid ones with what the model said and why it was rejected.
    lines = [json.loads(x) for x in Path(report["recorded"]).read_text().splitlines()]
    assert len(lines) == sum(s["calls"] for s in steps.values())
    looped = [x for x in lines if x["task"] == "decide_facts"]
    assert all(x["finish_reason"] == "length" and x["content"] for x in looped)
    assert not (tmp_path / "untouched.db").exists()  # a scratch store, never the configured one


def test_a_step_never_called_fails_whatever_the_threshold() -> None:
    calls = [
        CallRecord(n=i, task=task, what="", max_completion_tokens=100, finish_reason="stop",
                   prompt_tokens=10, completion_tokens=5, seconds=1.0, first_token_seconds=0.5,
                   content="{}", valid=True)
        for i, task in enumerate(["extract_facts", "extract_reflections", "consolidate"])
    ]  # fmt: skip
    q = Qualification("json_schema", "", "json_schema", [], CheckReport(), calls)

    verdicts = _verdicts(q, threshold=0.0)

    assert verdicts["decide_facts"][1] == "FAIL: never called"
    assert verdicts["extract_facts"][1] == "PASS"
    assert verdicts["extract_facts"][0].generated_per_s == 10.0  # 5 tokens in the last 0.5 s


def test_the_offline_rules_are_not_qualified_as_a_model(tmp_path: Path) -> None:
    """The default setup (no key, no server) has no model: one line saying what to configure,
    not a failed qualification of rules that never claimed to be one."""
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "s.db"),
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }

    result = runner.invoke(app, ["check-model"], env=env)

    assert result.exit_code == 2, result.stdout
    assert "heuristic" in result.stderr and "MNEMOS_MODELS__BASE_URL" in result.stderr
    assert "FAIL" not in result.stdout + result.stderr
