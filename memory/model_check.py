"""Formation in one process, without Temporal: what `mnemos check-model` runs against a provider.

The same steps as FormMemories and ConsolidateScope (memory/pipeline), with the same retry rule (a
retry says why the previous answer was rejected and samples hotter, memory.llm.base.Retry) and the
same fallbacks when a step's output stays unusable (README "When the model misbehaves"). Every
call is measured per step: schema-valid answers, fallbacks, tokens, latency. Which local model
works is answered by running it here on the bundled transcripts (samples/).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memory.deps import Deps
from memory.errors import InvalidModelOutputError, MalformedOutputError, WindowTooLargeError
from memory.llm import Purpose, choose_model
from memory.llm.base import Retry
from memory.model_check_record import CallRecord, Recorder
from memory.models import MAX_TIER, AgentConfig, MessageIn, ScopeKey
from memory.pipeline import commit, consolidation, dedup, facts, reflections, window
from memory.pipeline.types import (
    ConsolidationRequest,
    DecisionsResult,
    ExtractedFactsResult,
    FormationRequest,
    LlmCall,
    ReflectionsResult,
    Window,
)
from memory.settings import Settings

STEPS = ("extract_facts", "decide_facts", "extract_reflections", "consolidate")
# Asked by decide_facts only when the model kept a fact that may state a stored one again
# (memory/pipeline/restatements.py): reported when called, never required.
SECOND_LOOKS = ("same_fact",)
# The model each step asks is its purpose's (memory.llm.choose_model).
PURPOSES: dict[str, Purpose] = {
    "extract_facts": "fast",
    "decide_facts": "fast",
    "same_fact": "fast",
    "extract_reflections": "reflection",
    "consolidate": "consolidation",
}


TOP_TIER = MAX_TIER


@dataclass(frozen=True)
class TierModels:
    """The models agents of ``tier`` use, per purpose, and which of them no lower tier uses:
    those the check must still ask."""

    tier: int
    models: dict[Purpose, str]
    new: frozenset[str]

    def checks(self, step: str) -> bool:
        """Whether this tier's run judges the step: its model is one no lower tier asked."""
        return self.models[PURPOSES[step]] in self.new


def tiers_to_check(settings: Settings, provider: str) -> list[TierModels]:
    """Tier 0 and the highest tier, the latter only when it uses a model tier 0 does not (an
    agent of tier ≥ 1 has its reflections and consolidations made by the premium model): every
    model an agent may use is checked, none twice."""
    out: list[TierModels] = []
    seen: set[str] = set()
    for tier in (0, TOP_TIER):
        models: dict[Purpose, str] = {
            p: choose_model(settings, provider, p, tier)
            for p in ("fast", "reflection", "consolidation")
        }
        new = frozenset(models.values()) - seen
        if new:
            out.append(TierModels(tier, models, new))
            seen |= new
    return out


@dataclass
class StepStats:
    calls: int = 0
    valid: int = 0
    fallbacks: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: list[float] = field(default_factory=list)

    @property
    def valid_rate(self) -> float:
        return self.valid / self.calls if self.calls else 1.0

    def line(self, step: str) -> str:
        p50 = statistics.median(self.seconds) if self.seconds else 0.0
        worst = max(self.seconds, default=0.0)
        return (
            f"{step:<20} valid {self.valid}/{self.calls} ({self.valid_rate:.0%})  "
            f"fallbacks {self.fallbacks}  tokens {self.tokens_in} in / {self.tokens_out} out  "
            f"latency p50 {p50:.2f}s max {worst:.2f}s"
        )


@dataclass
class CheckReport:
    steps: dict[str, StepStats] = field(default_factory=lambda: {s: StepStats() for s in STEPS})
    degraded: list[str] = field(default_factory=list)
    # Set by `mnemos check-model`: every model call, marked valid when its step accepted it.
    recorder: Recorder | None = None

    def passed(self, threshold: float) -> bool:
        """Every step that was called answered schema-valid at least this often."""
        return all(s.valid_rate >= threshold for s in self.steps.values() if s.calls)

    def lines(self) -> list[str]:
        return [self.steps[s].line(s) for s in STEPS]


async def attempt[T](
    stats: StepStats,
    call: Callable[[Retry], Awaitable[T]],
    attempts: int,
    recorder: Recorder | None = None,
) -> tuple[T | None, str]:
    """(the step's result, "") or (None, why its output stayed unusable after ``attempts``; an
    answer rejected the same way twice, or one that cannot carry its window, is not retried).
    With a recorder, the model call an accepted attempt made is marked valid."""
    rejected: str | None = None
    for n in range(1, attempts + 1):
        stats.calls += 1
        started = time.perf_counter()
        before = len(recorder.calls) if recorder else 0
        try:
            out = await call(Retry(attempt=n, rejected=rejected))
        except (InvalidModelOutputError, MalformedOutputError, WindowTooLargeError) as e:
            stats.seconds.append(time.perf_counter() - started)
            again = str(e)[:300]
            if isinstance(e, WindowTooLargeError) or again == rejected:
                rejected = again
                break
            rejected = again
            continue
        stats.seconds.append(time.perf_counter() - started)
        stats.valid += 1
        for made in recorder.calls[before:] if recorder else []:
            # A second look the step let pass (facts._read_again) answered nothing valid.
            made.valid = made.error is None
        llm: list[LlmCall] = getattr(out, "llm", [])
        stats.tokens_in += sum(c.input_tokens for c in llm)
        stats.tokens_out += sum(c.output_tokens for c in llm)
        return out, ""
    stats.fallbacks += 1
    return None, rejected or "unusable output"


def _count_kept(recorder: Recorder | None, task: str, kept: int, since: int) -> None:
    """Note on the calls of the step's accepted attempt how many items each answer held, and on
    the last how many formation kept: a model whose every reflection echoes the prompt answers
    validly and keeps nothing. A window's extraction may be several calls (its second looks at
    messages it passed over, memory/pipeline/rereads.py): the calls not noted yet, back to the
    first that failed or was noted. Only calls since the window's first (``since``) are its: a
    window whose answers a higher tier's run reused made none, and the calls before are others'."""
    fresh: list[CallRecord] = []
    made = recorder.calls[since:] if recorder else []
    for call in reversed([c for c in made if c.task == task]):
        if not call.valid or call.items is not None:
            break
        fresh.insert(0, call)
    for n, call in enumerate(fresh, 1):
        try:
            answer = json.loads(call.content)
        except ValueError:
            answer = None
        lists = (
            [v for v in answer.values() if isinstance(v, list)] if isinstance(answer, dict) else []
        )
        call.items, call.kept = sum(len(v) for v in lists), kept if n == len(fresh) else 0


async def form_session(
    deps: Deps, agent_id: str, session_id: str, report: CheckReport, attempts: int = 3
) -> set[ScopeKey]:
    """Form every pending window of (session, agent), FormMemories' steps and fallbacks, and
    consolidate the scopes a commit made due. A window a step cannot carry is split, down to one
    message, as FormMemories does. Returns the scope keys the windows could write."""
    req = FormationRequest(session_id=session_id, agent_id=agent_id, force=True)
    keys: set[ScopeKey] = set()
    while (w := await window.load_window(deps.store, deps.settings, req)) is not None:
        keys |= {w.scope_key(s) for s in w.reflection_scopes}
        if not await _form_window(deps, w, report, attempts):
            req = req.model_copy(update={"max_messages": max(1, w.message_count // 2)})
    return keys


async def _form_window(deps: Deps, w: Window, report: CheckReport, attempts: int) -> bool:
    """Whether the window was formed (False: split it)."""
    steps, rec = report.steps, report.recorder
    since = len(rec.calls) if rec else 0
    extracted, why = await attempt(
        steps["extract_facts"], lambda r: facts.extract_facts(deps, w, r), attempts, rec
    )
    if extracted is None and w.message_count > 1:
        return False
    if extracted is None:
        report.degraded.append(f"{w.formation_id} extract_facts: {why}")
        extracted = ExtractedFactsResult(facts=[])
    new = extracted.facts
    candidates = await facts.find_candidates(deps, w, new)
    decided: DecisionsResult | None
    if candidates.by_new_index:  # only then is the model asked
        decided, why = await attempt(
            steps["decide_facts"],
            lambda r: dedup.decide(deps, w, new, candidates, r),
            attempts,
            rec,
        )
    else:
        decided = await dedup.decide(deps, w, new, candidates)
    if decided is None:
        report.degraded.append(f"{w.formation_id} decide_facts: {why}")
        decided = await dedup.undecided(deps, new, why)
    formed = [d.final_text for d in decided.decisions if d.final_text and d.event != "NONE"]
    reflected, why = await attempt(
        steps["extract_reflections"],
        lambda r: reflections.extract_reflections(deps, w, formed, r),
        attempts,
        rec,
    )
    if reflected is None and w.message_count > 1:
        return False
    if reflected is None:
        report.degraded.append(f"{w.formation_id} extract_reflections: {why}")
        reflected = ReflectionsResult(reflections=[])
    else:
        _count_kept(rec, "extract_reflections", len(reflected.reflections), since)
    if extracted.llm:
        _count_kept(rec, "extract_facts", len(new), since)
    done = await commit.commit(
        deps, w, new, decided.decisions, reflected.reflections, datetime.now(UTC)
    )
    for key in done.due_for_consolidation:
        await consolidate(deps, ConsolidationRequest(key=key), report, attempts)
    return True


async def consolidate(
    deps: Deps, req: ConsolidationRequest, report: CheckReport, attempts: int = 3
) -> None:
    """ConsolidateScope's step; its fallback keeps the buffer for a later run."""
    draft, why = await attempt(
        report.steps["consolidate"],
        lambda r: consolidation.draft(deps, req, r),
        attempts,
        report.recorder,
    )
    if draft is None:
        report.degraded.append(f"consolidate {req.key.key}: {why}")
    elif draft.content is not None:
        await consolidation.apply(deps, draft, datetime.now(UTC))


def load_transcript(path: Path) -> tuple[AgentConfig, str, list[MessageIn]]:
    """A bundled transcript (samples/*.json): the agent, the session id and its messages."""
    data = json.loads(path.read_text())
    messages = [MessageIn.model_validate(m) for m in data["messages"]]
    return AgentConfig.model_validate(data["agent"]), data["session_id"], messages


async def check_model(
    deps: Deps,
    transcripts: list[Path],
    attempts: int = 3,
    report: CheckReport | None = None,
    tier: int = 0,
) -> CheckReport:
    """Record each transcript in ``deps.store`` (a scratch store) as said by an agent of ``tier``
    (which chooses the models its steps ask) and form it; then consolidate every scope that
    still holds reflections, whatever its threshold."""
    report = report or CheckReport()
    cfg = deps.settings.formation
    weights = {r: cfg.weight(r) for r in ("user", "agent", "tool", "system", "other")}
    keys: set[ScopeKey] = set()
    for path in transcripts:
        agent, session_id, messages = load_transcript(path)
        agent = agent.model_copy(update={"tier": tier})
        if report.recorder:
            report.recorder.what = f"sample {path.name}"
        await deps.store.upsert_agent(agent)
        await deps.store.record_messages(
            session_id,
            agent.agent_id,
            messages,
            weights=weights,
            chars_per_token=cfg.chars_per_token,
            now=datetime.now(UTC),
        )
        keys |= await form_session(deps, agent.agent_id, session_id, report, attempts)
    for key in sorted(keys, key=lambda k: k.key):
        if report.recorder:
            report.recorder.what = f"consolidate {key.scope}"
        if await deps.store.unabsorbed_reflections(key, limit=1):
            await consolidate(deps, ConsolidationRequest(key=key, force=True), report, attempts)
    return report
