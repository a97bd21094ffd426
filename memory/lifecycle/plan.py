"""What an import would do, per agent and user, and what it leaves behind and why (--dry-run)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from memory.lifecycle.records import ImportBatch
from memory.models import SET_ASIDE

AGENT_WIDE = "(agent-wide)"


class PlanLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    agent_id: str | None
    user_id: str | None = None
    facts: int = 0
    reflections_buffered: int = 0
    reflections_absorbed: int = 0
    blobs: int = 0
    blobs_to_merge: int = 0
    words_cut: int = 0
    messages: int = 0
    erasures: int = 0  # an export's tombstones (rules.import_erasures), by user
    dropped: dict[str, int] = {}


class ImportPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    lines: tuple[PlanLine, ...]
    facts_with_source_vectors: dict[str, int] = {}

    @property
    def total_imported(self) -> int:
        return sum(
            ln.facts + ln.reflections_buffered + ln.reflections_absorbed + ln.blobs + ln.messages
            for ln in self.lines
        )

    @property
    def total_dropped(self) -> int:
        return sum(sum(ln.dropped.values()) for ln in self.lines)


def plan(batches: Iterable[ImportBatch]) -> ImportPlan:
    counts: dict[tuple[str | None, str | None], Counter[str]] = defaultdict(Counter)
    drops: dict[tuple[str | None, str | None], Counter[str]] = defaultdict(Counter)
    models: Counter[str] = Counter()
    for batch in batches:
        for f in batch.facts:
            counts[f.agent_id, f.user_id]["facts"] += 1
            if f.embedding is not None and f.embedding_model:
                models[f.embedding_model] += 1
        for r in batch.reflections:
            in_blob = r.absorbed_into_version not in (None, SET_ASIDE)  # set aside: in no blob
            state = "absorbed" if in_blob else "buffered"
            counts[r.scope_key.agent_id, r.scope_key.user_id][f"reflections_{state}"] += 1
        for b in batch.consolidated:
            c = counts[b.scope_key.agent_id, b.scope_key.user_id]
            c["blobs"] += 1
            c["blobs_to_merge"] += int(b.needs_merge)
            c["words_cut"] += b.words_cut
        for m in batch.messages:
            counts[m.message.agent_id, m.message.user_id]["messages"] += 1
        for e in batch.erasures:
            agent = None if e.agent_key == "*" or ":" in e.agent_key else e.agent_key
            counts[agent, e.user_id]["erasures"] += 1
        for d in batch.dropped:
            drops[d.agent_id, d.user_id][d.reason] += 1
    keys = sorted(set(counts) | set(drops), key=lambda k: (k[0] or "", k[1] or ""))
    return ImportPlan(
        lines=tuple(
            PlanLine(agent_id=a, user_id=u, **counts[a, u], dropped=dict(drops[a, u]))
            for a, u in keys
        ),
        facts_with_source_vectors=dict(models),
    )


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def render(p: ImportPlan, *, store_model: str | None = None) -> str:
    """The dry-run report: one block per agent, a line per user, drops with their reasons."""
    out: list[str] = []
    agent: str | None = "\0"
    for ln in p.lines:
        if ln.agent_id != agent:
            agent = ln.agent_id
            out.append(f"agent {agent or '(none)'}")
        who = ln.user_id or AGENT_WIDE
        reflections = _n(ln.reflections_buffered + ln.reflections_absorbed, "reflection")
        if ln.reflections_buffered:
            reflections += f" ({ln.reflections_buffered} buffered)"
        blobs = _n(ln.blobs, "blob")
        if ln.blobs_to_merge:
            blobs += f" ({ln.blobs_to_merge} to merge)"
        parts = [_n(ln.facts, "fact"), reflections, blobs]
        if ln.messages:
            parts.append(_n(ln.messages, "message"))
        if ln.erasures:
            parts.append(_n(ln.erasures, "erasure tombstone"))
        if ln.words_cut:
            parts.append(f"{ln.words_cut} words over the blob limit (kept only if merged by LLM)")
        out.append(f"  {who}: " + ", ".join(parts))
        for reason, n in sorted(ln.dropped.items()):
            out.append(f"    drop {n}: {reason}")
    for model, n in sorted(p.facts_with_source_vectors.items()):
        reuse = store_model is not None and model == store_model
        verb = "reused" if reuse else "re-embedded with the store's model"
        out.append(f"{_n(n, 'fact')} with {model} vectors: {verb}")
    out.append(f"total: {p.total_imported} to import, {p.total_dropped} dropped")
    return "\n".join(out)
