"""`mnemos check-model`: can the configured model form memory? The qualification to run before
trusting a model (a local one especially) with an agent's memory.

In one process, against a scratch SQLite store (nothing is written to yours), it:
1. asks the server whether it enforces a JSON schema, and says which mode the run uses;
2. forms the bundled transcripts (samples/*.json) through the four LLM steps and consolidates;
3. runs fixed cases with known right answers (memory/model_check_cases.py): a duplicate, a
   correction, a new fact, a relative date, a user-vs-agent scope choice, a consolidation of
   three reflections (so consolidation is judged even when the transcripts' reflections are
   all dropped).
It does so for every model an agent may use: tier 0's (fast, standard), then the highest tier's
model that tier 0 does not use (premium: reflections and consolidation of agents of tier >= 1),
whose run re-forms the transcripts reusing the answers the models already checked gave (none is
asked the same question twice) and runs the cases of the new model.
Per step, on the model it names, it prints the model calls, how many answers were valid, time
per call, tokens and tokens/s, and PASS or FAIL: a step never called FAILs (it has shown
nothing), as does one below the validity threshold or one whose fallback was taken. Exit code 1
on any FAIL, when the cases' accuracy of a tier's run is below ``--min-accuracy``, or when the
server refuses a model (one it does not serve). ``--record DIR`` saves every answer as JSON lines
that tests replay offline (tests/realmodel).
"""

from __future__ import annotations

import dataclasses
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from cli.common import JsonOption, emit, fail, load_settings, progress, run
from memory.deps import Deps
from memory.embedding import Embedder, make_embedder
from memory.errors import ProviderError
from memory.llm import choose_model, make_llm, resolve_provider
from memory.model_check import (
    PURPOSES,
    SECOND_LOOKS,
    STEPS,
    CheckReport,
    TierModels,
    check_model,
    tiers_to_check,
)
from memory.model_check_cases import CaseResult, Support, probe_structured, run_cases
from memory.model_check_record import CallRecord, Recorder, StepFigures
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore


def bundled_samples() -> Path:
    """The bundled transcripts: ``cli/samples`` (package data of an installed wheel or the image;
    a link to the repository's ``samples/`` in a checkout), else the checkout's ``samples/`` (a
    checkout whose link was not made, e.g. git on Windows without symlinks)."""
    here = Path(__file__).resolve().parent
    packaged = here / "samples"
    return packaged if packaged.is_dir() else here.parent / "samples"


SAMPLES = bundled_samples()


@dataclass
class TierRun:
    """The check of the models one tier chooses that no lower tier does."""

    tiers: TierModels
    cases: list[CaseResult]
    report: CheckReport
    calls: list[CallRecord]
    error: str | None = None  # the provider refused a model (not served, say): the run stopped


@dataclass
class Qualification:
    support: Support
    support_note: str
    mode: str
    runs: list[TierRun]

    @property
    def cases(self) -> list[CaseResult]:
        return [c for r in self.runs for c in r.cases]


async def _check(
    settings: Settings, transcripts: list[Path], attempts: int, record: Path | None
) -> Qualification:
    recorder = Recorder(make_llm(settings), record)
    embedder = make_embedder(settings)
    try:
        support, note = await probe_structured(recorder, settings)
        mode = support
        inner = recorder.inner
        if support in ("json_schema", "json_object") and hasattr(inner, "options"):
            # The run uses what the server supports; the output says which setting that is.
            inner.options = dataclasses.replace(inner.options, structured_output=support)
        runs = []
        for tiers in tiers_to_check(settings, recorder.name):
            runs.append(
                await _check_tier(settings, recorder, embedder, tiers, transcripts, attempts)
            )
            recorder.reuse |= tiers.new  # asked once: a higher tier's run reuses its answers
        recorder.flush()  # with the validity the steps gave each answer
        return Qualification(support, note, mode, runs)
    finally:
        await recorder.close()
        await embedder.close()


async def _check_tier(
    settings: Settings,
    recorder: Recorder,
    embedder: Embedder,
    tiers: TierModels,
    transcripts: list[Path],
    attempts: int,
) -> TierRun:
    """The transcripts formed by an agent of the tier, in a fresh scratch store (the state the
    lower tier's run started from, so its models' questions come again and are not re-asked),
    and the cases whose model is new."""
    first = len(recorder.calls)
    report = CheckReport(recorder=recorder)
    cases: list[CaseResult] = []
    with tempfile.TemporaryDirectory(prefix="mnemos-check-") as scratch:
        store = SQLiteStore(Path(scratch) / "check.db")
        await store.setup()
        deps = Deps(settings=settings, store=store, llm=recorder, embedder=embedder)
        try:
            await check_model(deps, transcripts, attempts, report, tier=tiers.tier)
            cases = await run_cases(recorder, settings, attempts, tiers.tier, tiers.new)
        except ProviderError as e:
            if e.retryable:
                raise
            # A model the server does not serve (a typo): the tier's agents could not form.
            return TierRun(tiers, cases, report, recorder.calls[first:], str(e)[:300])
        finally:
            await store.close()
    return TierRun(tiers, cases, report, recorder.calls[first:])


def _verdicts(run: TierRun, threshold: float) -> dict[str, tuple[StepFigures, str]]:
    out = {}
    # The second look at a possible restatement is asked only when a decision needs it.
    called = [s for s in SECOND_LOOKS if any(c.task == s for c in run.calls)]
    for step in (s for s in (*STEPS, *called) if run.tiers.checks(s)):
        figures = StepFigures.of(c for c in run.calls if c.task == step)
        fallbacks = _fallbacks(run, step)
        if not figures.calls:
            verdict = "FAIL: never called"
        elif not figures.valid:
            verdict = "FAIL: no valid answer"
        elif figures.valid_rate < threshold:
            verdict = f"FAIL: {figures.valid_rate:.0%} valid, below {threshold:.0%}"
        elif fallbacks:
            verdict = f"FAIL: fallback taken {fallbacks}x"
        else:
            verdict = "PASS"
        out[step] = (figures, verdict)
    return out


def _fallbacks(run: TierRun, step: str) -> int:
    """How often the step's fallback was taken (a second look has none: its decision stands)."""
    return run.report.steps[step].fallbacks if step in run.report.steps else 0


def _step_line(step: str, model: str, f: StepFigures, verdict: str) -> str:
    gen = f"{f.generated_per_s:.1f}" if f.generated_per_s is not None else "-"
    read = f"{f.prompt_per_s:.1f}" if f.prompt_per_s is not None else "-"
    # A valid answer may still give formation nothing: items it dropped (echoes of the prompt).
    kept = f"  kept {f.kept} of {f.items} items" if f.items is not None else ""
    return (
        f"{step:<20} on {model}  valid {f.valid}/{f.calls}  s/call p50 {f.seconds_p50:.1f} max "
        f"{f.seconds_max:.1f}  tokens {f.tokens_in} in ({f.tokens_cached} cached) / "
        f"{f.tokens_out} out  "
        f"tok/s gen {gen} prompt {read}{kept}  {verdict}"
    )


def _accuracy(run: TierRun) -> float:
    return sum(c.passed for c in run.cases) / len(run.cases) if run.cases else 0.0


def _run_passed(
    run: TierRun, verdicts: dict[str, tuple[StepFigures, str]], min_accuracy: float
) -> bool:
    steps_pass = all(v == "PASS" for _, v in verdicts.values())
    return run.error is None and steps_pass and _accuracy(run) >= min_accuracy


def _run_data(
    run: TierRun, verdicts: dict[str, tuple[StepFigures, str]], min_accuracy: float
) -> dict[str, object]:
    t = run.tiers
    return {
        "tier": t.tier,
        "models": t.models,
        "checked": sorted(t.new),
        "steps": {
            step: dataclasses.asdict(f)
            | {"verdict": v, "fallbacks": _fallbacks(run, step), "model": t.models[PURPOSES[step]]}
            for step, (f, v) in verdicts.items()
        },
        "accuracy": round(_accuracy(run), 3),
        "degraded": run.report.degraded,
        "error": run.error,
        "passed": _run_passed(run, verdicts, min_accuracy),
    }


def _run_lines(run: TierRun, verdicts: dict[str, tuple[StepFigures, str]]) -> list[str]:
    """A heading naming the models the tier's agents use, then its steps, each on its model."""
    t = run.tiers
    uses = ", ".join(f"{purpose} {model}" for purpose, model in t.models.items())
    lines = [f"tier {t.tier} agents use: {uses}; checking {', '.join(sorted(t.new))}"]
    lines += [_step_line(step, t.models[PURPOSES[step]], f, v) for step, (f, v) in verdicts.items()]
    if run.error:
        lines.append(f"FAIL: tier {t.tier}: {run.error}")
    return lines


def _record_name(settings: Settings, provider: str) -> str:
    model = choose_model(settings, provider, "fast", 0)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-") + ".jsonl"


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
        typer.Option(min=0.0, max=1.0, help="Least share of valid answers of every step."),
    ] = 0.8,
    min_accuracy: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Least share of fixed cases answered right."),
    ] = 0.8,
    attempts: Annotated[
        int, typer.Option(min=1, help="Attempts of a step before its fallback.")
    ] = 3,
    record: Annotated[
        Path | None,
        typer.Option(
            "--record",
            help="Directory to save every answer in (JSON lines, replayable by tests).",
            file_okay=False,
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Qualify the configured model for memory formation: every step, fixed cases, speed.

    Point MNEMOS_MODELS__PROVIDER / __BASE_URL at a local server (Ollama, llama.cpp, vLLM) and
    run this: nothing is written to your store.
    """
    settings = load_settings()
    if resolve_provider(settings) == "heuristic":
        # The rules are no model to qualify: their limits are documented, not measured here.
        fail(
            "check-model qualifies a language model, and the configured provider is the offline "
            "heuristic rules (no key, no base URL set): point MNEMOS_MODELS__BASE_URL at a "
            "local server, or set OPENAI_API_KEY / GEMINI_API_KEY",
            code=2,
        )
    transcripts = transcript or sorted(SAMPLES.glob("*.json"))
    if not transcripts:
        fail(f"no transcripts in {SAMPLES}")
    recorded = record / _record_name(settings, resolve_provider(settings)) if record else None
    with progress(f"qualifying the configured model on cases and {len(transcripts)} transcript(s)"):
        q = run(_check(settings, transcripts, attempts, recorded), settings)
    verdicts = [_verdicts(r, threshold) for r in q.runs]
    right = sum(c.passed for c in q.cases)
    accuracy = right / len(q.cases) if q.cases else 0.0
    # Every model the tiers choose must qualify: a failure of any fails the check.
    passed = all(_run_passed(r, v, min_accuracy) for r, v in zip(q.runs, verdicts, strict=True))
    degraded = [d for r in q.runs for d in r.report.degraded]
    runs = [_run_data(r, v, min_accuracy) for r, v in zip(q.runs, verdicts, strict=True)]
    data = {
        "passed": passed,
        "threshold": threshold,
        "structured_output": {"server": q.support, "note": q.support_note, "used": q.mode},
        "steps": runs[0]["steps"],  # tier 0's; every tier's under "tiers"
        "tiers": runs,
        "cases": [dataclasses.asdict(c) for c in q.cases],
        "accuracy": round(accuracy, 3),
        "degraded": degraded,
        "recorded": str(recorded) if recorded else None,
    }

    if recorded is not None:  # the verdicts next to the answers: a replay must reach the same
        recorded.with_suffix(".report.json").write_text(json.dumps(data, indent=2) + "\n")

    def text() -> str:
        setting = (
            f" (set MNEMOS_MODELS__STRUCTURED_OUTPUT={q.mode})"
            if q.mode != settings.models.structured_output and q.mode != "native"
            else ""
        )
        lines = [f"structured output: {q.support_note}; this run uses {q.mode}{setting}"]
        for r, v in zip(q.runs, verdicts, strict=True):
            lines += _run_lines(r, v)
        lines += [
            f"case {c.name:<20} {c.step:<14} on {c.model}  expected {c.expected}; "
            f"got {c.got[:120]}  {'PASS' if c.passed else 'FAIL'}"
            for c in q.cases
        ]
        lines.append(f"accuracy {right}/{len(q.cases)} ({accuracy:.0%})")
        lines += [f"degraded: {d}" for d in degraded]
        if recorded:
            lines.append(f"answers recorded in {recorded}")
        lines.append("PASS" if passed else "FAIL")
        return "\n".join(lines)

    emit(data, as_json=as_json, text=text)
    if not passed:
        raise typer.Exit(1)
