"""Writing import records into a store: agents, blobs (agent shards merged), facts (embedded
with the store's model unless the source's vectors are of that model), reflections, messages.

Every store call inserts by id only what is absent, so running an import again writes nothing
twice and an interrupted import resumes: records already written come back as ``existing``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory.deps import Deps
from memory.lifecycle.records import (
    ConsolidatedImport,
    FactImport,
    ImportBatch,
    ReflectionImport,
    SourceRef,
    consolidated_of,
    fact_of,
    reflection_of,
)
from memory.models import AgentConfig, Reflection
from memory.pipeline import consolidation
from memory.pipeline.embed_cache import embed_cached
from memory.pipeline.types import ConsolidationRequest
from memory.store.base import Vector
from memory.store.counts import ImportCounts

CHUNK = 500

Progress = Callable[[str, int], None]  # (what, how many records were just written)


@dataclass
class ImportReport:
    counts: dict[str, ImportCounts] = field(default_factory=dict)
    blobs: dict[str, str] = field(default_factory=dict)  # scope key -> outcome
    merged: list[str] = field(default_factory=list)  # scope keys merged by the consolidation step
    embedded: int = 0  # facts embedded by the store's model (not the source's vectors)

    def add(self, what: str, counts: ImportCounts) -> None:
        self.counts[what] = self.counts.get(what, ImportCounts()) + counts


def _chunks[T](items: Sequence[T]) -> list[Sequence[T]]:
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


async def _vectors(deps: Deps, facts: Sequence[FactImport]) -> tuple[list[Vector], int]:
    """The source's vector where its model (and dimension) is the store's, else a new one."""
    model = deps.embedder.model
    meta = await deps.store.embedding_meta()
    reusable = [
        f.embedding is not None
        and f.embedding_model == model
        and (meta is None or len(f.embedding) == meta[1])
        for f in facts
    ]
    texts = [f.content for f, ok in zip(facts, reusable, strict=True) if not ok]
    fresh, _ = await embed_cached(deps.store, deps.embedder, texts) if texts else ({}, 0)
    vectors = [
        np.asarray(f.embedding, dtype=np.float32) if ok else fresh[f.content]
        for f, ok in zip(facts, reusable, strict=True)
    ]
    return vectors, len(texts)


def shard_reflections(blob: ConsolidatedImport) -> list[Reflection]:
    """An agent's shards as buffered reflections of its scope, for the consolidation step."""
    source = (
        blob.sources[0]
        if blob.sources
        else SourceRef(system="eden", collection="memory_agent", source_id=blob.scope_key.key)
    )
    return [
        Reflection(
            reflection_id=source.derived_id(f"r{i}"),
            scope_key=blob.scope_key,
            content=f"{part.title}: {part.content}" if part.title else part.content,
            source_session_id="imported",
            formed_at=blob.updated_at,
        )
        for i, part in enumerate(blob.parts)
    ]


async def _merge(deps: Deps, blob: ConsolidatedImport, now: datetime, report: ImportReport) -> None:
    """Shards → buffered reflections → one consolidation run (the LLM merges them)."""
    report.add("reflections", await deps.store.import_reflections(shard_reflections(blob)))
    req = ConsolidationRequest(key=blob.scope_key, force=True)
    d = await consolidation.draft(deps, req)
    if d.content is not None:
        await consolidation.apply(deps, d, now)
    report.merged.append(blob.scope_key.key)


async def write_batch(
    deps: Deps,
    batch: ImportBatch,
    *,
    now: datetime,
    progress: Progress = lambda what, n: None,
) -> ImportReport:
    report = ImportReport()
    store = deps.store
    configs = [a.config or AgentConfig(agent_id=a.agent_id, name=a.agent_id) for a in batch.agents]
    report.add("agents", await store.import_agents(configs))
    progress("agents", len(configs))

    merge_with_llm = deps.llm.name != "heuristic"
    to_merge = [b for b in batch.consolidated if b.needs_merge and merge_with_llm]
    direct = [b for b in batch.consolidated if b not in to_merge]
    outcome = await store.import_consolidated([consolidated_of(b) for b in direct])
    report.blobs.update(outcome)
    for blob in to_merge:
        key = blob.scope_key.key
        if await store.get_consolidated(blob.scope_key) is None:
            await _merge(deps, blob, now, report)
            report.blobs[key] = "inserted"
        elif await store.get_reflection(shard_reflections(blob)[0].reflection_id) is not None:
            report.blobs[key] = "existing"  # merged by an earlier run
        else:
            report.blobs[key] = "conflict"  # the live blob wins
    progress("blobs", len(batch.consolidated))

    for all_facts in _chunks(batch.facts):
        # A re-run (or a resumed run) does not embed again what an earlier run wrote.
        present = {f.fact_id for f in await store.get_facts([f.fact_id for f in all_facts])}
        report.add("facts", ImportCounts(existing=len(present)))
        chunk = [f for f in all_facts if f.fact_id not in present]
        vectors, embedded = await _vectors(deps, chunk)
        report.embedded += embedded
        facts = [fact_of(f, deps.embedder.model) for f in chunk]
        if facts:
            report.add("facts", await store.import_facts(facts, vectors))
        progress("facts", len(all_facts))

    written = {k for k, v in report.blobs.items() if v in ("inserted", "existing")}
    for r_chunk in _chunks(batch.reflections):
        reflections = [_buffered_unless(r, written) for r in r_chunk]
        report.add("reflections", await store.import_reflections(reflections))
        progress("reflections", len(r_chunk))

    for m_chunk in _chunks(batch.messages):
        report.add("messages", await store.import_messages([m.message for m in m_chunk]))
        progress("messages", len(m_chunk))
    return report


def _buffered_unless(r: ReflectionImport, written: set[str]) -> Reflection:
    """Absorbed only into a blob that was written: else buffered, so nothing is lost."""
    reflection = reflection_of(r)
    if r.absorbed_into_version is not None and r.scope_key.key not in written:
        return reflection.model_copy(update={"absorbed_into_version": None})
    return reflection
