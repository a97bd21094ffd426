"""`mnemos check-model` against the fake OpenAI-compatible server serving a real small model's
recorded answers (tests/realmodel): per step calls, validity and verdict, the fixed cases, and
the exit code that says whether the model qualifies."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from cli.check_model import TierRun, _verdicts
from memory.model_check import CheckReport, TierModels
from memory.model_check_record import CallRecord
from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_error
from tests.realmodel.replay import CHECKED, Recorded, Replayer, checked, recorded  # noqa: F401

SHORT = CHECKED.parent / "short_conversation.json"

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
    # The default OpenAI models: tier 0's fast and standard are one, premium (tier ≥ 1) another.
    assert [(c["name"], c["model"]) for c in report["cases"]] == [
        ("duplicate", "gpt-4.1-mini"), ("correction", "gpt-4.1-mini"),
        ("new fact", "gpt-4.1-mini"), ("relative date", "gpt-4.1-mini"),
        ("user vs agent scope", "gpt-4.1-mini"), ("consolidation", "gpt-4.1-mini"),
        ("consolidation", "gpt-4.1"),
    ]  # fmt: skip
    assert not any(c["passed"] for c in report["cases"] if c["step"] == "decide_facts")
    # Every call recorded, the invalid ones with what the model said and why it was rejected.
    lines = [json.loads(x) for x in Path(report["recorded"]).read_text().splitlines()]
    every_tier = [s for t in report["tiers"] for s in t["steps"].values()]
    assert len(lines) == sum(s["calls"] for s in every_tier)
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
    one = "local-model"
    tiers = TierModels(0, {"fast": one, "reflection": one, "consolidation": one}, frozenset({one}))

    verdicts = _verdicts(TierRun(tiers, [], CheckReport(), calls), threshold=0.0)

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


# Three models, as an operator sets them: tier 0's agents use the first two, an agent of tier ≥ 1
# has its reflections and consolidations made by the premium one.
THREE_MODELS = {
    "MNEMOS_MODELS__OPENAI_FAST": "small-fast",
    "MNEMOS_MODELS__OPENAI_STANDARD": "small-standard",
    "MNEMOS_MODELS__OPENAI_PREMIUM": "big-premium",
}


def _asked(server: FakeProviderServer) -> list[tuple[str, str]]:
    """Each model request: the model and the question it was asked."""
    bodies = [r.body for r in server.requests if isinstance(r.body, dict)]
    return [(b["model"], json.dumps(b["messages"])) for b in bodies if "messages" in b]


def test_check_model_also_qualifies_the_premium_model_of_higher_tiers(
    tmp_path: Path,
    checked: list[Recorded],  # noqa: F811
) -> None:
    replayer = Replayer(checked)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        result = runner.invoke(
            app, ["check-model", "--json", "--transcript", str(SHORT)],
            env=_env(tmp_path, server) | THREE_MODELS,
        )  # fmt: skip
        asked = _asked(server)

    # The model a tier-1 agent reflects and consolidates with was asked.
    assert {m for m, _ in asked} == {"small-fast", "small-standard", "big-premium"}
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["passed"] is True, result.stdout
    premium = report["tiers"][1]
    assert (premium["tier"], premium["checked"]) == (10, ["big-premium"])
    assert {s: (f["model"], f["verdict"]) for s, f in premium["steps"].items()} == {
        "extract_reflections": ("big-premium", "PASS"),
        "consolidate": ("big-premium", "PASS"),
    }
    assert ("consolidation", "big-premium") in [(c["name"], c["model"]) for c in report["cases"]]
    # The premium run re-forms the transcript: the fast model's questions are not asked again.
    assert len(asked) == len(set(asked))


def test_a_premium_model_the_server_does_not_serve_fails_the_check(
    tmp_path: Path,
    checked: list[Recorded],  # noqa: F811
) -> None:
    """A typo in MNEMOS_MODELS__OPENAI_PREMIUM: a tier-1 agent's formation would fail at its
    reflections; the check says so before, naming the model."""
    replayer = Replayer(checked)

    def serve(request: Received) -> Reply:
        if isinstance(request.body, dict) and request.body.get("model") == "big-premium":
            return openai_error(
                404, "The model `big-premium` does not exist", code="model_not_found"
            )
        return replayer(request)

    with FakeProviderServer() as server:
        server.script(*[serve] * 200)
        result = runner.invoke(
            app, ["check-model", "--transcript", str(SHORT)],
            env=_env(tmp_path, server) | THREE_MODELS,
        )  # fmt: skip

    assert result.exit_code == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "FAIL"
    assert any(x.startswith("FAIL: tier 10: ") and "big-premium" in x for x in lines), lines
    # Tier 0's models qualified, each step's line naming the model it ran on.
    assert any(x.startswith("extract_facts") and "on small-fast" in x for x in lines)
    assert any(x.startswith("extract_reflections") and "on small-standard" in x for x in lines)


def test_a_model_every_tier_uses_is_checked_once(
    tmp_path: Path,
    checked: list[Recorded],  # noqa: F811
) -> None:
    """A local server serving one model under the three names: one run, nothing asked twice."""
    one = dict.fromkeys(THREE_MODELS, "qwen2.5-coder-1.5b")
    replayer = Replayer(checked)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 200)
        result = runner.invoke(
            app, ["check-model", "--json", "--transcript", str(SHORT)],
            env=_env(tmp_path, server) | one,
        )  # fmt: skip
        asked = _asked(server)

    report = json.loads(result.stdout)
    assert [t["tier"] for t in report["tiers"]] == [0] and report["passed"] is True
    assert len(report["cases"]) == 6
    assert len(asked) == len(set(asked))
