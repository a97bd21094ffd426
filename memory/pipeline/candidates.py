"""Step 4: the similar facts each new fact is decided against (its dedup candidates): stored facts
of the window's scopes by vector, and the window's own earlier new facts, within a size its
decision's payloads can carry."""

from __future__ import annotations

import numpy as np

from memory import ids
from memory.deps import Deps
from memory.embedding.base import Embedder
from memory.pipeline.embed_cache import embed_cached
from memory.pipeline.types import CandidatesResult, NewFact, SimilarFact, Window
from memory.scopes import dedup_filter
from memory.settings import FactSettings
from memory.store.base import Vector


def dedup_gate(cfg: FactSettings, embedder: Embedder) -> float:
    """Min cosine of a dedup candidate: the threshold when set explicitly, else the embedder's
    measured dedup gate (cosine scales differ between models), else the configured default."""
    calibrated = embedder.calibration.dedup_gate if embedder.calibration else None
    if "dedup_similarity_threshold" in cfg.model_fields_set or calibrated is None:
        return cfg.dedup_similarity_threshold
    return calibrated


async def find_candidates(deps: Deps, window: Window, facts: list[NewFact]) -> CandidatesResult:
    cfg = deps.settings.facts
    if not facts or not cfg.dedup_enabled:
        return CandidatesResult(by_new_index={})
    vectors, calls = await embed_cached(deps.store, deps.embedder, [f.content for f in facts])
    gate = dedup_gate(cfg, deps.embedder)
    found = await deps.store.vector_searches(
        [vectors[f.content] for f in facts],
        dedup_filter(window.agent_id, window.fact_scopes, window.user_id),
        limit=cfg.dedup_candidates,
        min_score=gate,
    )
    earlier = _said_earlier(window, facts, vectors, gate)
    by_index: dict[int, list[SimilarFact]] = {}
    for f, hits in zip(facts, found, strict=True):
        stored = [
            SimilarFact(
                fact_id=s.fact.fact_id,
                content=s.fact.content,
                version=s.fact.version,
                similarity=s.score,
            )
            for s in hits
        ]
        similar = sorted([*stored, *earlier.get(f.index, [])], key=lambda c: -c.similarity)
        if similar:
            by_index[f.index] = similar[: cfg.dedup_candidates]
    return CandidatesResult(by_new_index=fewest_fitting(by_index), embedding_calls=calls)


# The candidates' texts of one window travel in three step payloads (the search's result, the
# decision's input, the commit's input), each refused by Temporal over 2 MB, and two of them in
# one 4 MB message: a dense message's 320 facts with 20 candidates of 400 characters each would be
# 2.5 MB, and its formation stuck for ever. Under a third of the limit (in UTF-8, as the payloads
# carry it) leaves room for the rest of each payload.
CANDIDATE_BYTES = 600_000


def fewest_fitting(
    by_index: dict[int, list[SimilarFact]], budget: int = CANDIDATE_BYTES
) -> dict[int, list[SimilarFact]]:
    """``by_index`` (each fact's candidates, most similar first) with at most as many candidates
    a fact as keeps their texts within ``budget`` bytes: the most similar of each are kept
    (at least one), so that a window's size cannot make its decision's payloads too large."""
    most = max((len(found) for found in by_index.values()), default=0)
    while most > 1 and sum(_size(found[:most]) for found in by_index.values()) > budget:
        most -= 1
    return {i: found[:most] for i, found in by_index.items()}


def _size(found: list[SimilarFact]) -> int:
    return sum(len(s.content.encode()) for s in found)


def _said_earlier(
    window: Window, facts: list[NewFact], vectors: dict[str, Vector], gate: float
) -> dict[int, list[SimilarFact]]:
    """The window's earlier new facts as candidates of each later one of the same scope: a
    correction said within one window ("my number is 555-1234", then "sorry, 555-9999") is
    decided as it would be across two. Each stands for the fact its add will write (its
    deterministic id, version 1); decision_order.through_window retargets a decision about one
    that was not added."""
    unit = {f.index: _unit(vectors[f.content]) for f in facts}
    out: dict[int, list[SimilarFact]] = {}
    for j, later in enumerate(facts):
        for before in facts[:j]:
            score = float(np.dot(unit[later.index], unit[before.index]))
            if before.scope == later.scope and score >= gate:
                out.setdefault(later.index, []).append(
                    SimilarFact(
                        fact_id=ids.fact_id(window.formation_id, before.index),
                        content=before.content,
                        version=1,
                        similarity=score,
                    )
                )
    return out


def _unit(vector: Vector) -> Vector:
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
