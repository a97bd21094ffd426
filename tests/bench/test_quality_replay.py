"""bench/quality.py replaying a real small model offline: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M,
llama.cpp via xllamacpp, 8,192-token context) recorded on the hand-made conversation of
tests/bench/fixtures (not LoCoMo data) with ``--model-cache``, its answers and judge verdicts
served back from tests/bench/fixtures/real-model. The workers form memories through the
OpenAI-compatible provider exactly as they did against the model; a request the recording does
not hold fails the run (``--replay``: no model server), so a prompt change shows here first.

Re-record (about 20 minutes on 2 cores) after changing a prompt or the formation path:

    python bench/local_model.py serve --ctx 8192        # then the MNEMOS_MODELS__* it prints
    export MNEMOS_MODELS__CONTEXT_TOKENS=8192
    python bench/quality.py --data tests/bench/fixtures/tiny_locomo.json \\
        --provider openai-compatible --workers 1 --triggers session-end \\
        --model-cache tests/bench/fixtures/real-model/formation \\
        --cache tests/bench/fixtures/real-model/eval --eval-base-url URL --eval-api-key local \\
        --answer-model qwen2.5-coder-1.5b-instruct-q4_k_m \\
        --judge-model qwen2.5-coder-1.5b-instruct-q4_k_m
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
RECORDED = FIXTURES / "real-model"
MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def _replay(tmp_path: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    shutil.copytree(RECORDED, tmp_path / "recorded")  # replay never writes, but never risk it
    details = tmp_path / "details.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOS_")}
    env |= {
        "MNEMOS_MODELS__OPENAI_FAST": MODEL,
        "MNEMOS_MODELS__OPENAI_STANDARD": MODEL,
        "MNEMOS_MODELS__OPENAI_PREMIUM": MODEL,
        "MNEMOS_MODELS__CONTEXT_TOKENS": "8192",
        "MNEMOS_BENCH_EVAL_API_KEY": "local",
    }
    done = subprocess.run(
        [
            sys.executable, "bench/quality.py", "--data", str(FIXTURES / "tiny_locomo.json"),
            "--provider", "openai-compatible", "--workers", "1", "--triggers", "session-end",
            "--model-cache", str(tmp_path / "recorded" / "formation"), "--replay",
            "--cache", str(tmp_path / "recorded" / "eval"),
            "--answer-model", MODEL, "--judge-model", MODEL,
            # Nothing listens there: every answer and verdict must come from the recording.
            "--eval-base-url", "http://127.0.0.1:9/v1",
            "--details", str(details),
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    rows = {r["question"]: r for r in map(json.loads, details.read_text().splitlines())}
    return out, rows


def test_a_recorded_small_model_forms_the_same_memories_offline(tmp_path: Path) -> None:
    out, rows = _replay(tmp_path)

    # Every model answer came from the recording, none was missing, nothing degraded.
    # 14: the model filed Ana's "I am excited to start my new job at Lumen Labs…" as agent
    # memory, every user's; it is hers now (memory/scopes.py about_the_speaker), and her user
    # memory's consolidation took the agent's (re-recorded at that change).
    assert (out["model_answers_replayed"], out["model_answers_asked"]) == (14, 0)
    assert out["model_answers_missing"] == 0
    assert (out["eval_cached"], out["eval_requests"]) == (8, 0)
    assert out["failed_runs"] == 0 and out["degraded_runs"] == 0
    assert out["workflows"] == {"ConsolidateScope": 4, "EndSession": 4, "FormMemories": 4}
    assert out["provider"] == "openai_compatible" and out["triggers"] == "session-end"
    # What the 1.5B model kept, measured as on LoCoMo: 7 of 8 evidence turns among the top facts;
    # its own judge found 2 of 4 answers right (it judged "Biscuit" wrong for Ben's dog).
    assert out["facts"] == 11
    # 7 new facts had no similar fact, stored or said earlier in their window; the model ADDed
    # 4 others and UPDATEd one: a window's answer passed over Ben's "I am training for the
    # Porto marathon in October", a second look at that message alone read it
    # (memory/pipeline/rereads.py: the one answer more than before), and the model merged it
    # into the fact another session had formed of it.
    assert out["decisions"] == {"ADD": 11, "UPDATE": 1, "by_model": 5, "by_rule": 7, "refused": 0}
    assert out["evidence_recall_at_10"] == 0.875
    assert out["j"] == 0.5

    lives = rows["Where does Ana live?"]
    assert {"content": "Ana lives in Lisbon now, near the river.", "scope": "user",
            "sources": ["D1:3"]} in lives["facts"]  # fmt: skip
    assert (lives["generated"], lives["correct"]) == ("Lisbon", True)
    dog = rows["What is the name of Ben's dog?"]
    # "on Saturday", said on Sunday 3 March 2024, stands on its own in time.
    assert any(
        f["content"] == "Ben adopted a beagle called Biscuit on 2 March 2024."
        and f["sources"] == ["D1:2"]
        for f in dog["facts"]
    )
    # The multi-hop question's second city was never formed into a fact: half its evidence.
    both = rows["Which cities do Ana's sister and Ben's marathon take them to?"]
    assert both["evidence_recall_at_10"] == 0.5


def test_questions_are_asked_as_of_the_conversation_not_the_wall_clock() -> None:
    """The recorded answer requests (the memory context and search results the model read) count
    ages from a day after the last session (20 March 2024, 4:30 pm), whatever day they ran."""
    asked = [
        json.loads(path.read_text())["request"]["messages"][-1]["content"]
        for path in (RECORDED / "eval").glob("*/*.json")
    ]
    answers = [text for text in asked if "search_facts results:" in text]
    assert len(answers) == 4  # one per question; the rest are the judge's
    assert all("(said 3 March 2024, 18d ago)" in text for text in answers)
