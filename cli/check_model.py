"""`mnemos check-model`: does the configured model form memory? Runs the four LLM steps on the
bundled transcripts (samples/*.json) in one process against a scratch SQLite store, and prints per
step the schema-valid rate, the fallbacks taken, tokens in/out and latency
(memory/model_check.py). Exit code 1 when a step's valid rate is below the threshold."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from cli.common import JsonOption, emit, fail, load_settings, progress, run
from memory.deps import Deps
from memory.embedding import make_embedder
from memory.llm import make_llm
from memory.model_check import CheckReport, check_model
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


async def _check(settings: Settings, transcripts: list[Path], attempts: int) -> CheckReport:
    with tempfile.TemporaryDirectory(prefix="mnemos-check-") as scratch:
        store = SQLiteStore(Path(scratch) / "check.db")
        await store.setup()
        deps = Deps(
            settings=settings, store=store, llm=make_llm(settings), embedder=make_embedder(settings)
        )
        try:
            return await check_model(deps, transcripts, attempts)
        finally:
            await deps.close()


def check_model_command(
    transcript: Annotated[
        list[Path] | None,
        typer.Option(
            "--transcript",
            help="A transcript JSON like samples/conversation.json (repeatable; "
            "default: the bundled samples, in name order).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Least schema-valid rate of every step."),
    ] = 0.8,
    attempts: Annotated[
        int, typer.Option(min=1, help="Attempts of a step before its fallback.")
    ] = 3,
    as_json: JsonOption = False,
) -> None:
    """Run the four LLM steps of formation against the configured provider and measure them.

    Which local model works? Point MNEMOS_MODELS__PROVIDER / __BASE_URL at it (Ollama, llama.cpp,
    vLLM) and run this: nothing is written to your store.
    """
    settings = load_settings()
    transcripts = transcript or sorted(SAMPLES.glob("*.json"))
    if not transcripts:
        fail(f"no transcripts in {SAMPLES}")
    with progress(f"forming {len(transcripts)} transcript(s) with the configured model"):
        report = run(_check(settings, transcripts, attempts), settings)
    passed = report.passed(threshold)
    data = {
        "passed": passed,
        "threshold": threshold,
        "steps": {
            step: {
                "calls": s.calls,
                "valid": s.valid,
                "valid_rate": round(s.valid_rate, 3),
                "fallbacks": s.fallbacks,
                "tokens_in": s.tokens_in,
                "tokens_out": s.tokens_out,
                "latency_seconds": [round(x, 3) for x in s.seconds],
            }
            for step, s in report.steps.items()
        },
        "degraded": report.degraded,
    }
    verdict = "PASS" if passed else f"FAIL: a step is below {threshold:.0%} schema-valid"
    emit(data, as_json=as_json, text=lambda: "\n".join([*report.lines(), verdict]))
    if not passed:
        raise typer.Exit(1)
