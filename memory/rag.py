"""search_facts: hybrid retrieval over the facts one agent turn may see (002 "search_facts").

Pipeline, for 1..max_queries queries:
1. one embedding call for all queries (vector and hybrid modes), while the text searches, which
   need no vector, already run;
2. per query, vector search and text search, both pre-filtered inside the store by the
   scopes the turn may see (``visible_scopes``: toggles and the group-chat rule). Each fetches
   top_k × candidate_multiplier candidates. The text search gets the query's content words and,
   when the query holds identifiers ("number 4711", "order A-17": ``memory.identifiers``), a
   second text search gets those alone, so the fact holding a rare token is a candidate however
   many facts share the query's other words;
3. each list keeps only the candidates that pass its own threshold; the lists of every query and
   both methods are fused (``fuse``) and deduplicated by fact id; best first; the candidates
   holding the queries' identifiers first (``with_identifier_tier``); top_k per query (each
   query's own best top_k, in that common order: ``_per_query``);
4. the returned facts are marked accessed (store.touch_facts), unless ``touch=False``.

The gates (``search_gates``): the cosine and fused gates are the embedder's measured calibration
(``Embedder.calibration``, e.g. MiniLM: cosine 0.30, no fused gate) unless it has none or the
settings turn calibration off; then 002's "RAG Thresholds", set on OpenAI's scale, apply:
- semantic 0.65 — cosine similarity in [-1, 1], as every backend's vector_search reports it
  (the MongoDB backend recomputes cosines; Atlas itself reports (1 + cos) / 2). On OpenAI's
  scale 0.65 keeps "clearly the same topic"; with MiniLM a question and the turn that answers it
  score ~0.5 (on LoCoMo only 12% of the evidence turns reach 0.65), hence per-model gates.
- text 1.5 — the stores' shared BM25 scale (≥ 0; k1 1.2, b 0.15: memory/store/rules/text.py).
  One query word contributes about idf = ln((N − n + 0.5) / (n + 0.5)) to a fact of average
  length that holds it once (n of the N facts hold the word; N is every fact on SQLite, the
  filtered ones on MongoDB): alone, a word passes when fewer than about 1 in 5 facts hold it. A
  match on a common word alone never counts; a rare word, or several words, do. (So in a store
  of under ~10 facts, one shared word is not enough.)
- rrf 0.015 — classic reciprocal rank fusion, Σ 1 / (k + rank) with k = 60 and ranks from 1, summed
  over every list (each method × each query). A first place is 1/61 ≈ 0.0164: a fact found by one
  list only passes when ranked 1–6 there, a fact found by two lists passes up to rank ~70 in each.
  So with this gate a search returns the facts both methods agree on plus at most the top 6
  of each list per query, often fewer than top_k, and can rank below its own text-only mode;
  a calibration may turn it off (0), leaving each list's own gate to decide. Single-method
  modes have no second list to agree with and skip it.

Ordering the survivors (measured on LoCoMo with bench/locomo.py, see ``fuse``): per query, each
list's scores are min-max normalised and combined with weights favouring the text list (which is
the stronger one with a small sentence embedder), then a fact takes its best query's score.
Then the session prior (``with_session_prior``): the candidates formed in the same session as
one of the best ``session_prior_hits`` hits gain ``session_prior_weight`` × that hit's score, so
the turn that answers a question without repeating its words comes up beside the one that
matched. It only reorders candidates already found within the turn's scopes. A hit also reports
its raw evidence: the best cosine and BM25 score it had in any list.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.context import age_suffix, visible_scopes
from memory.embedding.base import Embedder
from memory.errors import EmbeddingMismatchError
from memory.fusion import (
    Fused,
    RankedList,
    Source,
    fuse,
    merged,
    with_identifier_tier,
    with_session_prior,
)
from memory.identifiers import identifier_keys
from memory.models import AgentConfig, FactFilter, ScoredFact, SessionInfo
from memory.query_words import text_queries
from memory.search_input import check_top_k, clean_queries
from memory.search_results import (
    Candidate,
    CandidateList,
    FusedCandidate,
    SearchDebug,
    SearchHit,
    SearchMode,
    SearchResult,
)
from memory.settings import RagSettings, Settings
from memory.store.base import MemoryStore, Vector

# How much each list counts in the fused score (hybrid mode). On LoCoMo (MiniLM + BM25) any vector
# weight in 0.3–0.5 beats both single methods at every cut; 0.4 is the middle of that plateau.
HYBRID_WEIGHTS: Mapping[Source, float] = {"vector": 0.4, "text": 0.6}

# ------------------------------------------------------------------ search


def search_gates(rag: RagSettings, embedder: Embedder, mode: SearchMode) -> dict[str, float]:
    """The gates this search applies: the embedder's calibration when it has one and the
    settings allow it, else the configured numbers; the fused gate only in hybrid mode."""
    calibration = embedder.calibration if rag.calibrated_gates else None
    semantic = rag.semantic_score_threshold if calibration is None else calibration.cosine_gate
    rrf = rag.rrf_score_threshold if calibration is None else calibration.rrf_gate
    return {
        "semantic": semantic,
        "text": rag.text_score_threshold,
        "rrf": rrf if mode == "hybrid" else 0.0,
    }


@dataclass(frozen=True)
class _Search:
    query_index: int
    query: str
    source: Source
    store_query: str
    found: list[ScoredFact]  # as the store returned them
    passed: list[ScoredFact]  # those at or above the threshold
    took_ms: float


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


async def _vector(
    store: MemoryStore,
    index: int,
    query: str,
    vector: Vector,
    flt: FactFilter,
    *,
    limit: int,
    threshold: float,
    debug: bool,
) -> _Search:
    started = time.perf_counter()
    # The store applies the threshold itself (less to load) unless debug wants the rejects too:
    # the top ``limit`` above it are the same facts either way.
    floor = -1.0 if debug else threshold
    found = await store.vector_search(vector, flt, limit=limit, min_score=floor)
    passed = [s for s in found if s.score >= threshold]
    return _Search(index, query, "vector", query, found, passed, _ms(started))


async def _text(
    store: MemoryStore, index: int, query: str, words: str, flt: FactFilter, *, limit: int,
    threshold: float,
) -> _Search:  # fmt: skip
    started = time.perf_counter()
    found = await store.text_search(words, flt, limit=limit)
    passed = [s for s in found if s.score >= threshold]
    return _Search(index, query, "text", words, found, passed, _ms(started))


async def _embed(store: MemoryStore, embedder: Embedder, queries: list[str]) -> list[Vector]:
    """One embedding call for every query, in the model the stored facts were embedded with.
    The model is read afresh (one small read beside the embedding call): a re-embed run in
    another process switches it, and a cached one would compare vectors of two models."""
    meta, batch = await asyncio.gather(store.embedding_meta(fresh=True), embedder.embed(queries))
    if meta is not None and meta != (batch.model, batch.dimension):
        raise EmbeddingMismatchError(
            f"facts are stored as {meta[0]}/{meta[1]}, queries embedded as "
            f"{batch.model}/{batch.dimension}: search with the embedder the facts were made with"
        )
    return [batch.vectors[i] for i in range(len(queries))]


async def search_facts(
    store: MemoryStore,
    embedder: Embedder,
    settings: Settings,
    *,
    agent: AgentConfig,
    session: SessionInfo | None,
    user_id: str | None,
    queries: list[str],
    top_k: int | None = None,
    debug: bool = False,
    now: datetime,
    mode: SearchMode = "hybrid",
    touch: bool = True,
) -> SearchResult:
    """The best facts for the queries among those this turn may see (see the module docstring).
    ``touch=False``: the facts are not marked accessed (a person looking, not the agent's use).

    Raises InvalidInputError for bad queries or top_k, EmbeddingMismatchError when the embedder is
    not the one the stored facts were embedded with.
    """
    started = time.perf_counter()
    rag = settings.rag
    cleaned = clean_queries(queries, rag)
    wanted = check_top_k(top_k, rag)
    limit = wanted * rag.candidate_multiplier
    flt = visible_scopes(agent, session, user_id).fact_filter
    gates = search_gates(rag, embedder, mode)
    timings: dict[str, float] = {}

    searches: list[_Search] = []
    if flt is not None:  # no scope on: nothing to search, and no store call

        async def vector_half() -> list[_Search]:
            stage = time.perf_counter()
            vectors = await _embed(store, embedder, cleaned)
            timings["embed"] = _ms(stage)
            return list(await asyncio.gather(*(
                _vector(store, i, q, v, flt, limit=limit, threshold=gates["semantic"],
                        debug=debug)
                for i, (q, v) in enumerate(zip(cleaned, vectors, strict=True))
            )))  # fmt: skip

        async def text_half() -> list[_Search]:
            return list(await asyncio.gather(*(
                _text(store, i, q, words, flt, limit=limit, threshold=gates["text"])
                for i, q in enumerate(cleaned)
                for words in text_queries(q)
            )))  # fmt: skip

        # The text half needs no vector: it runs while the queries are embedded (the embedding
        # is most of a search's time, ~8 ms a query on one core with the default MiniLM).
        halves: list[Awaitable[list[_Search]]] = []
        if mode != "text":
            halves.append(vector_half())
        if mode != "vector":
            halves.append(text_half())
        stage = time.perf_counter()  # "search" spans both halves, the embedding included
        searches = [s for half in await asyncio.gather(*halves) for s in half]
        timings["search"] = _ms(stage)

    stage = time.perf_counter()
    lists = merged([RankedList(s.query_index, s.source, s.passed) for s in searches])
    min_rrf = gates["rrf"]
    # Only the modes with a text half rank by identifiers: vector mode is the embedder's alone.
    exact = identifier_keys(cleaned) if mode != "vector" else frozenset()
    fused = _ranked(lists, rag, min_rrf, exact)
    best = _per_query(fused, lists, rag, cleaned, wanted, by_identifier=mode != "vector")
    timings["fuse"] = _ms(stage)

    if best and touch:
        stage = time.perf_counter()
        await store.touch_facts([f.hit.fact.fact_id for f in best], now)
        timings["touch"] = _ms(stage)
    evidence = _best_scores(searches)
    hits = [
        SearchHit(
            fact_id=f.hit.fact.fact_id,
            content=f.hit.fact.content,
            scope=f.hit.fact.scope,
            age=age_suffix(f.hit.fact.said_at or f.hit.fact.updated_at, now),
            score=round(f.score, 6),
            cosine=evidence["vector"].get(f.hit.fact.fact_id),
            bm25=evidence["text"].get(f.hit.fact.fact_id),
            updated_at=f.hit.fact.updated_at,
            said_at=f.hit.fact.said_at,
            said_utc_offset_minutes=f.hit.fact.said_utc_offset_minutes,
            source_session_id=f.hit.fact.source_session_id,
            source_message_ids=tuple(f.hit.fact.source_message_ids),
        )
        for f in best
    ]
    timings["total"] = _ms(started)
    if not debug:
        return SearchResult(hits=hits)
    return SearchResult(
        hits=hits,
        debug=SearchDebug(
            mode=mode,
            embedding_model=embedder.model if mode != "text" else None,
            queries=cleaned,
            top_k=wanted,
            candidates_per_list=limit,
            thresholds=gates,
            timings_ms=timings,
            lists=[_candidate_list(s) for s in searches],
            fused=_fused_debug(lists, fused, rag.rrf_k, {h.fact_id for h in hits}),
        ),
    )


def _ranked(
    lists: Sequence[RankedList], rag: RagSettings, min_rrf: float, exact: frozenset[str]
) -> list[Fused]:
    """The fused candidates that pass the gate (or hold one of the queries' identifiers), best
    first, after the session prior, those holding the queries' identifiers first."""
    fused = fuse(lists, k=rag.rrf_k, weights=HYBRID_WEIGHTS, min_rrf=min_rrf, exact=exact)
    prior = with_session_prior(fused, weight=rag.session_prior_weight, hits=rag.session_prior_hits)
    return with_identifier_tier(prior, exact)


def _per_query(
    fused: Sequence[Fused],
    lists: Sequence[RankedList],
    rag: RagSettings,
    queries: Sequence[str],
    wanted: int,
    *,
    by_identifier: bool,
) -> list[Fused]:
    """Up to ``wanted`` facts per query (002: top_k is "per query"), in the order of all the
    queries' fused ranking: each query's best as it alone ranks them, so that a query about a
    deadline is not crowded out by one about a budget whose facts score higher."""
    if len(queries) == 1:
        return list(fused[:wanted])
    chosen: set[str] = set()
    gated = {f.hit.fact.fact_id for f in fused}
    for index, query in enumerate(queries):
        own = [ranked for ranked in lists if ranked.query_index == index]
        exact = identifier_keys([query]) if by_identifier else frozenset()
        # Ranked without the RRF gate, which sums over every query's lists: a fact two queries
        # agree on passes it together and neither alone. What passed the search's gate counts.
        mine = [f for f in _ranked(own, rag, 0.0, exact) if f.hit.fact.fact_id in gated]
        chosen |= {f.hit.fact.fact_id for f in mine[:wanted]}
    return [f for f in fused if f.hit.fact.fact_id in chosen]


def _best_scores(searches: Sequence[_Search]) -> dict[Source, dict[str, float]]:
    """Per method, each fact's best raw score among the candidates that passed its gate."""
    best: dict[Source, dict[str, float]] = {"vector": {}, "text": {}}
    for search in searches:
        scores = best[search.source]
        for s in search.passed:
            fid = s.fact.fact_id
            scores[fid] = round(max(scores.get(fid, s.score), s.score), 4)
    return best


def _candidate_list(search: _Search) -> CandidateList:
    ranks = {s.fact.fact_id: rank for rank, s in enumerate(search.passed, start=1)}
    return CandidateList(
        query=search.query,
        source=search.source,
        store_query=search.store_query,
        took_ms=search.took_ms,
        candidates=[
            Candidate(fact_id=s.fact.fact_id, score=s.score, rank=ranks.get(s.fact.fact_id))
            for s in search.found
        ],
    )


def _fused_debug(
    lists: Sequence[RankedList], passed: Sequence[Fused], k: int, returned: set[str]
) -> list[FusedCandidate]:
    """Every candidate of the lists with its fused scores, best first, gated ones included."""
    ranked = {f.hit.fact.fact_id: f for f in passed}
    # A gated candidate lends no prior and gets none: it is shown with its plain fused score.
    gated = [
        f
        for f in fuse(lists, k=k, weights=HYBRID_WEIGHTS, min_rrf=0.0)
        if f.hit.fact.fact_id not in ranked
    ]
    return [
        FusedCandidate(
            fact_id=f.hit.fact.fact_id, rrf=f.rrf, score=f.score, session_prior=f.session_prior,
            passed=f.hit.fact.fact_id in ranked, returned=f.hit.fact.fact_id in returned,
        )
        for f in [*passed, *gated]
    ]  # fmt: skip
