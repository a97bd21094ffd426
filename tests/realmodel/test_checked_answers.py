"""Today's prompts answered by the real small model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M on 2 CPU
cores, recorded by `mnemos check-model --record`, tests/realmodel/data/), replayed through the
fake OpenAI-compatible server:

- through FormMemories and its real activities: the short conversation forms with no degraded
  step, its facts cite the messages they came from, and reflections that only repeat the
  prompt's section descriptions are dropped;
- through `mnemos check-model`, offline: the same verdicts as the real run.
"""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli.app import app
from memory.llm.openai_provider import OpenAIProvider
from memory.model_check import load_transcript
from tests.fake_provider_server import FakeProviderServer
from tests.harness import Harness
from tests.realmodel.replay import CHECKED, Recorded, Replayer, checked  # noqa: F401

# Four messages of samples/conversation.json: on 2 shared cores a 1.5B model reads ~5-50 prompt
# tokens/s, so the recorded run forms a short transcript (every step still runs).
SHORT = CHECKED.parent / "short_conversation.json"


def _real_run() -> dict[str, object]:
    """What the real run printed (`--json`), recorded next to its answers."""
    data: dict[str, object] = json.loads(CHECKED.with_suffix(".report.json").read_text())
    return data


async def test_the_real_answers_form_the_sample_conversation_through_the_workflow(
    time_env: WorkflowEnvironment,
    tmp_path: Path,
    checked: list[Recorded],  # noqa: F811
) -> None:
    answers = [a for a in checked if a.what == f"sample {SHORT.name}"]
    agent, session_id, messages = load_transcript(SHORT)
    replayer = Replayer(answers)
    with FakeProviderServer() as server:
        server.script(*[replayer] * 50)
        h = await Harness.create(time_env, tmp_path)
        h.agent = agent
        await h.store.upsert_agent(agent)
        h.llm = OpenAIProvider(api_key=None, base_url=server.openai_base_url)  # type: ignore[assignment]
        await h.record(session_id, messages)
        async with h.worker():
            formed = await h.form(session_id)

    assert formed.degraded == [] and formed.formations == 1
    # This recording (2026-11-26 14:15, a cold server on an AVX2 CPU) kept four facts, all of them
    # Alice's: what a 1.5B model gives, replayed as it is. It put her job in agent memory, which
    # every user of the agent reads; the fact names her, so it is hers (memory/scopes.py).
    assert formed.facts_extracted == 4 and formed.facts_added == 4
    stored = await h.all_facts(user_id="alice")  # the agent's facts and alice's
    assert {(f.content, f.scope) for f in stored} == {
        ("Alice is the CTO of Acme Robotics.", "user"),
        ("The Mars Festival opens on March 15, 2027 in Lisbon.", "user"),
        ("The total budget is $50,000.", "user"),
        ("The vendor contract deadline is January 10, 2027.", "user"),
    }
    # Its five reflections only repeat the prompt's descriptions of the three sections ("what
    # has happened so far (a rolling summary); …"): dropped as echoes, none buffered.
    assert formed.reflections_added == 0
    assert stored and all(f.source_message_ids for f in stored)
    said = {m.message_id for m in messages}
    assert all(set(f.source_message_ids) <= said for f in stored)


def test_check_model_replayed_offline_gives_the_real_runs_verdicts(
    tmp_path: Path,
    checked: list[Recorded],  # noqa: F811
) -> None:
    real = _real_run()
    with FakeProviderServer() as server:
        server.script(*[Replayer(checked)] * 200)
        result = CliRunner().invoke(
            app,
            ["check-model", "--json", "--transcript", str(SHORT)],
            env={
                "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "untouched.db"),
                "MNEMOS_MODELS__PROVIDER": "openai_compatible",
                "MNEMOS_MODELS__BASE_URL": server.openai_base_url,
                "MNEMOS_EMBEDDING__PROVIDER": "local",
                "MNEMOS_LOG_LEVEL": "warning",
            },
        )
    replayed = json.loads(result.stdout)
    steps, real_steps = replayed["steps"], real["steps"]
    assert isinstance(real_steps, dict)
    for step, figures in real_steps.items():
        assert steps[step]["calls"] == figures["calls"], step
        assert steps[step]["valid"] == figures["valid"], step
        assert steps[step]["verdict"] == figures["verdict"] == "PASS", step
    # The model kept "yesterday"; formation's date rule (memory/dates.py) resolves it.
    passed = {c["name"]: c["passed"] for c in replayed["cases"]}
    assert passed == {
        # The model said ADD for "Alice was born on March 3."; asked once more, of that pair
        # alone, it said the same fact (memory/pipeline/restatements.py): NONE.
        "duplicate": True,
        "correction": True,
        "new fact": True,
        "relative date": True,
        "user vs agent scope": True,
        "consolidation": True,
    }
    assert passed == {c["name"]: c["passed"] for c in real["cases"]}  # type: ignore[attr-defined]
    assert "9 March 2026" in next(
        c["got"] for c in replayed["cases"] if c["name"] == "relative date"
    )
    assert result.exit_code == 0 and replayed["passed"] is True, result.stdout  # 6/6
    # The transcript's reflections were all dropped: the case alone exercised consolidation.
    assert steps["consolidate"]["calls"] == 1 == steps["consolidate"]["valid"]
    assert steps["same_fact"]["calls"] == 1 == steps["same_fact"]["valid"]
    # Valid is not kept: the reflections' five items all echoed the prompt, and the output says so.
    assert (steps["extract_reflections"]["kept"], steps["extract_reflections"]["items"]) == (0, 5)
    assert (steps["extract_facts"]["kept"], steps["extract_facts"]["items"]) == (4, 4)
