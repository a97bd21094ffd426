"""Steps 6, 8 and 10 in one atomic write: fact changes, buffered reflections and the cursor move.

The vectors of the stored texts were made by the decide step and are read from the embedding
cache here: the commit never calls the embedder. A vector missing from the cache (purged, or the
embedding model changed in between) makes the decisions stale: the workflow decides again, which
embeds again."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memory import ids
from memory.degraded import DegradedWindow
from memory.deps import Deps
from memory.errors import StaleDecisionError
from memory.formation_commit import (
    AddRecheck,
    FactAdd,
    FactInvalidate,
    FactKeep,
    FactOp,
    FactUpdate,
    FormationCommit,
)
from memory.ids import text_hash
from memory.models import Reflection
from memory.pipeline.candidates import dedup_gate
from memory.pipeline.dedup import stored_texts
from memory.pipeline.embed_cache import cache_key
from memory.pipeline.types import (
    CandidatesResult,
    CommitResult,
    Decision,
    NewFact,
    NewReflection,
    Window,
)
from memory.triggers import formation_due


def fact_ops(
    window: Window, facts: list[NewFact], decisions: list[Decision], vectors: dict[str, list[float]]
) -> list[FactOp]:
    by_index = {f.index: f for f in facts}
    ops: list[FactOp] = []
    for d in decisions:
        fact = by_index[d.new_index]
        new_id = ids.fact_id(window.formation_id, d.new_index)
        user_id = window.user_id if fact.scope == "user" else None
        text = d.final_text or fact.content
        provenance = {"source_message_ids": fact.source_message_ids, "said_at": fact.said_at}
        match d.event:
            case "ADD":
                ops.append(
                    FactAdd(
                        fact_id=new_id,
                        scope=fact.scope,
                        user_id=user_id,
                        content=text,
                        embedding=vectors[text],
                        **provenance,
                    )
                )
            case "UPDATE":
                assert (
                    d.existing_id is not None and d.expected_version is not None
                )  # resolve() checked
                ops.append(
                    FactUpdate(
                        fact_id=d.existing_id,
                        expected_version=d.expected_version,
                        content=text,
                        embedding=vectors[text],
                        reason=d.reasoning,
                        **provenance,
                    )
                )
            case "DELETE":
                assert d.existing_id is not None and d.expected_version is not None
                ops.append(
                    FactAdd(
                        fact_id=new_id,
                        scope=fact.scope,
                        user_id=user_id,
                        content=text,
                        embedding=vectors[text],
                        **provenance,
                    )
                )
                ops.append(
                    FactInvalidate(
                        fact_id=d.existing_id,
                        expected_version=d.expected_version,
                        replaced_by=new_id,
                        reason=d.reasoning,
                    )
                )
            case "NONE" if d.existing_id is not None and d.expected_version is not None:
                # Drops the new statement as already known: only while the fact it was judged to
                # repeat is still the version it was judged against. Said later, it dates it.
                ops.append(
                    FactKeep(
                        fact_id=d.existing_id, expected_version=d.expected_version, **provenance
                    )
                )
    return ops


async def _cached_vectors(deps: Deps, texts: list[str]) -> dict[str, list[float]]:
    hashes = {t: text_hash(t) for t in dict.fromkeys(texts)}
    cached = await deps.store.get_embeddings(cache_key(deps.embedder), list(hashes.values()))
    missing = [t for t, h in hashes.items() if h not in cached]
    if missing:
        raise StaleDecisionError(
            f"{len(missing)} decided text(s) have no cached {deps.embedder.model} vector: decide again"
        )
    return {t: [float(x) for x in cached[h]] for t, h in hashes.items()}


def _recheck(deps: Deps, window: Window, candidates: CandidatesResult | None) -> AddRecheck | None:
    """What the decisions saw, for the commit to re-check its adds against (None: an older
    run's commit, whose candidates carry no read time). A new fact shown a full list of
    candidates saw the most similar ones: a fact less similar than its last one would not have
    been shown, however recent (a dense backlog holds many similar facts)."""
    cfg = deps.settings.facts
    if candidates is None or candidates.read_at is None or not cfg.dedup_enabled:
        return None
    seen = {s.fact_id: s.version for hits in candidates.by_new_index.values() for s in hits}
    floors = {
        ids.fact_id(window.formation_id, index): min(s.similarity for s in hits)
        for index, hits in candidates.by_new_index.items()
        if len(hits) >= cfg.dedup_candidates
    }
    return AddRecheck(
        candidates_read_at=candidates.read_at,
        seen=seen,
        similarity=dedup_gate(cfg, deps.embedder),  # the gate the candidates were read at
        floors=floors,
    )


async def commit(
    deps: Deps,
    window: Window,
    facts: list[NewFact],
    decisions: list[Decision],
    reflections: list[NewReflection],
    now: datetime,
    candidates: CandidatesResult | None = None,
    *,
    keep_cursor: int | None = None,
    degraded: Sequence[DegradedWindow] = (),
) -> CommitResult:
    """``keep_cursor``: a re-formed window (memory/reform.py) writes its memories and leaves the
    cursor where it is, which must still be ``keep_cursor``. ``degraded``: the window's degraded
    steps, recorded in the same transaction as its memories."""
    texts = stored_texts(facts, decisions)
    as_lists = await _cached_vectors(deps, texts)
    # Every text this formation may have cached a vector of: its facts (candidate search) and
    # the texts it stores (UPDATE merges included).
    embedded = dict.fromkeys(text_hash(t) for t in [*(f.content for f in facts), *texts])
    per_scope: dict[str, int] = {}
    stored: list[Reflection] = []
    for r in reflections:
        n = per_scope[r.scope] = per_scope.get(r.scope, -1) + 1
        stored.append(
            Reflection(
                reflection_id=ids.reflection_id(window.formation_id, r.scope, n),
                scope_key=window.scope_key(r.scope),
                content=r.content,
                source_session_id=window.session_id,
                source_message_ids=r.source_message_ids,
                formation_id=window.formation_id,
                said_at=r.said_at,
                formed_at=now,
            )
        )
    result = await deps.store.commit_formation(
        FormationCommit(
            formation_id=window.formation_id,
            session_id=window.session_id,
            agent_id=window.agent_id,
            expected_cursor=window.after_seq if keep_cursor is None else keep_cursor,
            new_cursor=window.upto_seq if keep_cursor is None else keep_cursor,
            embedding_model=deps.embedder.model,
            fact_ops=fact_ops(window, facts, decisions, as_lists),
            reflections=stored,
            committed_at=now,
            user_epochs=window.user_epochs,
            recheck=_recheck(deps, window, candidates),
            embedded_text_hashes=list(embedded),
            degraded=list(degraded),
        )
    )
    # The commit counted the buffers it added to: no second read, and on a retried commit the
    # counts it stored then.
    thresholds = deps.settings.reflections
    due = [
        key
        for key in (window.scope_key(s) for s in window.reflection_scopes)
        if result.buffered.get(key.key, 0) >= thresholds.threshold(key.scope)
    ]
    return CommitResult(
        already_committed=result.already_committed,
        facts_added=result.facts_added,
        facts_updated=result.facts_updated,
        facts_invalidated=result.facts_invalidated,
        facts_duplicate=result.facts_duplicate,
        reflections_added=result.reflections_added,
        due_for_consolidation=due,
        pending_messages=result.state.pending_messages if result.state else 0,
        due_after=result.state is not None and formation_due(result.state, deps.settings.formation),
        discarded_for_erasure=result.discarded_for_erasure,
    )
