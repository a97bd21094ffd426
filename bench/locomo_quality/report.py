"""The figures of one run: the JSON object (the bench's last line) and the table a person reads."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.locomo_quality.data import CATEGORIES, Conversation
from bench.locomo_quality.judge import Judged
from bench.locomo_quality.metrics import by_category, per_100
from bench.locomo_quality.run import Asked, BaselineRow
from bench.locomo_quality.stack import WorkflowStats


@dataclass
class RunFacts:
    """What the run did, beside the questions."""

    data: str
    provider: str
    embedder: str
    conversations: Sequence[Conversation]
    mnemos_sessions: int
    facts: int
    stats: WorkflowStats
    formation_seconds: float
    wall_seconds: float
    answer_model: str | None = None
    judge_model: str | None = None
    eval_requests: int = 0
    eval_cached: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def figures(
    run: RunFacts,
    asked: Sequence[Asked],
    baseline: Sequence[BaselineRow],
    judged: Sequence[Judged] | None,
) -> dict[str, Any]:
    messages = sum(len(c.turns) for c in run.conversations)
    recall = by_category([(a.question.category, a.evidence_recall) for a in asked])
    token_recall = by_category([(a.question.category, a.answer_token_recall) for a in asked])
    base_recall = by_category([(b.category, b.evidence_recall) for b in baseline])
    base_tokens = by_category([(b.category, b.answer_token_recall) for b in baseline])
    j = (
        by_category(
            [(a.question.category, float(v.correct)) for a, v in zip(asked, judged, strict=True)]
        )
        if judged is not None
        else None
    )
    categories: dict[str, dict[str, Any]] = {}
    for number, name in CATEGORIES.items():
        categories[name] = {
            "questions": sum(a.question.category == number for a in asked),
            "evidence_recall_at_10": recall[name],
            "answer_token_recall": token_recall[name],
            "baseline_evidence_recall_at_10": base_recall[name],
            "baseline_answer_token_recall": base_tokens[name],
            **({"j": j[name]} if j is not None else {}),
        }
    return {
        "data": run.data,
        "provider": run.provider,
        "embedder": run.embedder,
        "conversations": len(run.conversations),
        "sessions": sum(len(c.sessions) for c in run.conversations),
        "mnemos_sessions": run.mnemos_sessions,
        "messages": messages,
        "questions": len(asked),
        "unscorable_questions": sum(c.unscorable_questions for c in run.conversations),
        "unasked_questions": sum(c.unasked_questions for c in run.conversations),
        "evidence_recall_at_10": recall["overall"],
        "answer_token_recall": token_recall["overall"],
        "context_tokens_median": _median([a.context_tokens for a in asked]),
        "full_context_tokens": _median([a.full_context_tokens for a in asked]),
        "facts": run.facts,
        "facts_per_100_messages": per_100(run.facts, messages),
        "llm_calls_per_100_messages": per_100(run.stats.llm_calls, messages),
        "llm_tokens_per_100_messages": per_100(run.stats.llm_tokens, messages),
        "failed_runs": len(run.stats.failed),
        "degraded_runs": len(run.stats.degraded),
        "decisions": dict(sorted(run.stats.decisions.items())),
        "workflows": dict(sorted(run.stats.closed.items())),
        "baseline_evidence_recall_at_10": base_recall["overall"],
        "baseline_answer_token_recall": base_tokens["overall"],
        "j": j["overall"] if j is not None else None,
        "j_unlabelled": sum(v.unlabelled for v in judged) if judged is not None else None,
        "answer_model": run.answer_model,
        "judge_model": run.judge_model,
        "eval_requests": run.eval_requests,
        "eval_cached": run.eval_cached,
        "by_category": categories,
        "formation_seconds": round(run.formation_seconds, 1),
        "wall_seconds": round(run.wall_seconds, 1),
        **run.extra,
    }


def _median(values: Sequence[int]) -> int:
    return round(statistics.median(values)) if values else 0


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(out: dict[str, Any]) -> str:
    names = list(CATEGORIES.values())
    cats = out["by_category"]
    head = f"{'':30}{'overall':>9}" + "".join(f"{n:>13}" for n in names)
    rows = [
        ("evidence_recall_at_10", "evidence_recall_at_10", "evidence_recall_at_10"),
        ("  raw-turn baseline", "baseline_evidence_recall_at_10", "baseline_evidence_recall_at_10"),
        ("answer_token_recall", "answer_token_recall", "answer_token_recall"),
        ("  raw-turn baseline", "baseline_answer_token_recall", "baseline_answer_token_recall"),
    ]
    if out["j"] is not None:
        rows.append(("J (LLM judge)", "j", "j"))
    lines = [
        f"LoCoMo through mnemos: {out['conversations']} conversation(s), {out['sessions']} "
        f"sessions ({out['mnemos_sessions']} mnemos sessions), {out['messages']} messages, "
        f"{out['questions']} questions ({out['unscorable_questions']} whose evidence names no "
        f"turn and {out['unasked_questions']} beyond --sessions left out); "
        f"provider {out['provider']}, embedder {out['embedder']}",
        head,
        f"{'questions':30}{out['questions']:>9}"
        + "".join(f"{cats[n]['questions']:>13}" for n in names),
    ]
    for label, overall, per in rows:
        lines.append(
            f"{label:30}{_cell(out[overall]):>9}"
            + "".join(f"{_cell(cats[n][per]):>13}" for n in names)
        )
    workflows = ", ".join(f"{k} {v}" for k, v in out["workflows"].items())
    lines += [
        f"context tokens per query, median: {out['context_tokens_median']} "
        f"(the whole conversation: {out['full_context_tokens']})",
        f"facts: {out['facts']} ({out['facts_per_100_messages']} per 100 messages); LLM calls "
        f"{out['llm_calls_per_100_messages']} and tokens {out['llm_tokens_per_100_messages']} "
        "per 100 messages",
        f"workflows: {workflows}; failed {out['failed_runs']}, degraded {out['degraded_runs']}",
        "dedup decisions: "
        + (", ".join(f"{k} {v}" for k, v in out["decisions"].items() if v) or "none"),
        f"wall: {out['wall_seconds']} s ({out['formation_seconds']} s recording and forming)",
    ]
    if out["answer_model"]:
        lines.append(
            f"answers {out['answer_model']}, judge {out['judge_model']}: {out['eval_requests']} "
            f"requests, {out['eval_cached']} from the cache, {out['j_unlabelled']} unlabelled"
        )
    return "\n".join(lines)
