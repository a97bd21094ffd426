"""bench/quality.py end to end, as a user runs it: a tiny hand-made LoCoMo-format conversation
(tests/bench/fixtures, not LoCoMo data) through its own dev server and a real worker process with
the offline heuristic provider, answers and judge verdicts from a local OpenAI-compatible fake."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_chat

ROOT = Path(__file__).resolve().parents[2]
TINY = Path(__file__).parent / "fixtures" / "tiny_locomo.json"
RIGHT = "Where does Ana live?"


def _endpoint(received: Received) -> Reply:
    """The judge (asked for JSON) finds only the answer to RIGHT correct."""
    prompt = received.body["messages"][-1]["content"]
    if "response_format" in received.body:
        label = "CORRECT" if f"Question: {RIGHT}" in prompt else "WRONG"
        return openai_chat(json.dumps({"label": label}))
    return openai_chat("Lisbon")


def test_the_bench_measures_a_tiny_conversation_through_the_product(tmp_path: Path) -> None:
    details = tmp_path / "details.jsonl"
    with FakeProviderServer() as server:
        server.script(*[_endpoint] * 8)  # four questions, each answered and judged once
        done = subprocess.run(
            [
                sys.executable, "bench/quality.py", "--data", str(TINY), "--workers", "1",
                "--details", str(details), "--cache", str(tmp_path / "cache"),
                "--answer-model", "answerer", "--judge-model", "judge",
                "--eval-base-url", server.openai_base_url, "--eval-api-key", "sk-test",
            ],
            cwd=ROOT, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 8
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])

    assert out["failed_runs"] == 0
    assert out["degraded_runs"] == 0
    # Two mnemos sessions per LoCoMo session, each ended through its EndSession workflow.
    assert out["mnemos_sessions"] == 4
    assert out["workflows"]["EndSession"] == 4
    assert out["messages"] == 8
    assert (out["questions"], out["unscorable_questions"]) == (4, 1)
    assert out["facts_per_100_messages"] > 0
    assert out["llm_calls_per_100_messages"] > 0
    assert out["context_tokens_median"] > 0
    assert out["baseline_evidence_recall_at_10"] is not None
    # J from the judge's labels: one of four correct, one of the two single-hop questions.
    assert out["j"] == 0.25
    assert out["by_category"]["single_hop"]["j"] == 0.5
    assert out["eval_requests"] == 8

    rows = {r["question"]: r for r in map(json.loads, details.read_text().splitlines())}
    lives = rows[RIGHT]
    assert lives["views"] == ["ana"]
    # The heuristic surely extracts "Ana lives in Lisbon": its fact cites the turn D1:3.
    assert lives["evidence_recall_at_10"] == 1.0
    assert lives["answer_token_recall"] == 1.0
    assert ["D1:3"] in [f["sources"] for f in lives["facts"]]
    both = rows["Which cities do Ana's sister and Ben's marathon take them to?"]
    assert both["views"] == ["ana", "ben"]


def _children(pid: int) -> set[int]:
    return {
        int(child)
        for task in Path(f"/proc/{pid}/task").iterdir()
        for child in (task / "children").read_text().split()
    }


def _running(pid: int) -> bool:
    """Alive, not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def test_a_terminated_bench_stops_the_dev_server_and_workers_it_started(tmp_path: Path) -> None:
    """SIGTERM (a `timeout`, a CI job cancelled) mid-run: left running, the workers would go on
    forming, calling the model server, for a run nobody reads."""
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as stderr:
        bench = subprocess.Popen(
            [
                sys.executable, "bench/quality.py", "--data", str(TINY), "--workers", "1",
                "--cache", str(tmp_path / "cache"),
            ],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr, text=True,
        )  # fmt: skip
    spawned: set[int] = set()
    try:
        assert bench.stdout is not None
        started = bench.stdout.readline()  # printed once the dev server and the worker run
        assert started.startswith("recording"), started + errors.read_text()[-3000:]
        spawned = _children(bench.pid)
        assert len(spawned) >= 2  # the dev server and the worker
        bench.send_signal(signal.SIGTERM)
        bench.wait(timeout=90)
        left = [pid for pid in spawned if _running(pid)]
    finally:
        bench.kill()
        for pid in spawned:  # whatever the outcome, nothing of this test outlives it
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
    assert bench.returncode == 128 + signal.SIGTERM, errors.read_text()[-3000:]
    assert "terminated" in errors.read_text()
    assert left == []
