"""Fact search of the MongoDB store: Atlas ($vectorSearch, $search) or $text + numpy.

Scores are computed here, not taken from the server, so that both paths, and both backends,
share one scale:

- vector: exact cosine in numpy between the query and the stored embeddings of the candidates
  (Atlas reports (1 + cos) / 2, mongoeco raw cosine; the ANN candidates are re-ranked exactly).
- text: Okapi BM25 on the shared scale (memory.store.rules.text). ``$text`` scores are not BM25 (mongoeco scores every match 1.0) and ``$search`` returns no
  searchScore on mongoeco, so the server only selects candidates. N and the average length are
  those of the facts the filter lets through (FTS5 uses the whole table), and the document
  frequency n of each term is counted among the candidates: every filtered fact that holds a
  query word is a candidate, so this is the filtered collection's count, exact up to
  CANDIDATE_CAP candidates (beyond it, the best CANDIDATE_CAP by the server's own relevance).
  Words match exactly (case and diacritics folded): unlike SQLite's porter tokenizer, neither
  $text with language "none" nor lucene.standard stems.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt
import structlog
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from memory.models import FactFilter
from memory.store.base import Vector
from memory.store.mongo.docs import Doc
from memory.store.mongo.indexes import TEXT_INDEX, VECTOR_INDEX
from memory.store.rules.text import bm25, tokenize

log = structlog.get_logger(__name__)

CANDIDATE_CAP = 1000
MAX_TERMS = 64
# Above this many matrix cells the cosine product runs in a worker thread.
_THREAD_CELLS = 1_000_000

Scored = list[tuple[Doc, float]]
AtlasMode = Literal["auto", "on", "off"]


def fact_match(flt: FactFilter, *, valid_only: bool = True) -> Doc | None:
    """The valid facts (all, unless valid_only) a filter lets through, in the operator subset
    $vectorSearch's filter accepts ($and/$or/$eq); None when it lets nothing through."""
    branches: list[Doc] = []
    if flt.include_agent_scope:
        branches.append({"scope": {"$eq": "agent"}})
    if flt.user_id is not None:
        branches.append({"$and": [{"scope": {"$eq": "user"}}, {"user_id": {"$eq": flt.user_id}}]})
    if not branches:
        return None
    validity: list[Doc] = [{"invalidated": {"$eq": False}}] if valid_only else []
    return {"$and": [{"agent_id": {"$eq": flt.agent_id}}, *validity, {"$or": branches}]}


def search_filter(flt: FactFilter) -> list[Doc]:
    """The same filter as $search compound.filter clauses (only when fact_match is not None)."""
    branches: list[Doc] = []
    if flt.include_agent_scope:
        branches.append({"equals": {"path": "scope", "value": "agent"}})
    if flt.user_id is not None:
        branches.append(
            {
                "compound": {
                    "filter": [
                        {"equals": {"path": "scope", "value": "user"}},
                        {"equals": {"path": "user_id", "value": flt.user_id}},
                    ]
                }
            }
        )
    return [
        {"equals": {"path": "agent_id", "value": flt.agent_id}},
        {"equals": {"path": "invalidated", "value": False}},
        {"compound": {"should": branches, "minimumShouldMatch": 1}},
    ]


def _cosine(query: Vector, matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    q_norm = float(np.linalg.norm(query))
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    scores = (matrix @ query) / (norms * (q_norm or 1.0))
    return np.clip(scores, -1.0, 1.0).astype(np.float32, copy=False)


async def cosine_scores(query: Vector, embeddings: Sequence[Sequence[float]]) -> list[float]:
    if not embeddings:
        return []
    matrix = np.asarray(embeddings, dtype=np.float32)
    if matrix.size > _THREAD_CELLS:
        scores = await asyncio.to_thread(_cosine, query, matrix)
    else:
        scores = _cosine(query, matrix)
    return [float(s) for s in scores]


def _best(scored: Scored, limit: int, min_score: float = -math.inf) -> Scored:
    kept = [(doc, s) for doc, s in scored if s >= min_score]
    kept.sort(key=lambda item: (-item[1], item[0]["_id"]))
    return kept[:limit]


class FactSearch:
    """Runs each kind of search on Atlas when it works, else on $text / numpy.

    ``auto`` decides once per kind: from $listSearchIndexes when the server has it (Atlas: the
    index exists and is queryable), else by trying the search itself (mongoeco serves
    $vectorSearch/$search but not $listSearchIndexes; a community server fails both).
    """

    def __init__(self, facts: AsyncCollection[Doc], mode: AtlasMode) -> None:
        self._facts = facts
        self._mode = mode
        self._atlas: dict[str, bool] = {}

    # ------------------------------------------------------------ path choice

    async def _listed(self, index: str) -> bool | None:
        try:
            cursor = await self._facts.list_search_indexes(index)
            docs = await cursor.to_list()
        except OperationFailure:
            return None
        return any(doc.get("queryable", False) for doc in docs)

    async def _run(
        self,
        index: str,
        atlas: Callable[[], Awaitable[Scored]],
        fallback: Callable[[], Awaitable[Scored]],
    ) -> Scored:
        if self._mode != "auto":
            return await (atlas() if self._mode == "on" else fallback())
        use = self._atlas.get(index)
        if use is None:
            use = await self._listed(index)
        if use is None:
            try:
                result = await atlas()
            except OperationFailure as exc:
                log.info("atlas_search_unavailable", index=index, error=str(exc))
                self._atlas[index] = False
                return await fallback()
            self._atlas[index] = True
            return result
        self._atlas[index] = use
        return await (atlas() if use else fallback())

    # ------------------------------------------------------------ vector

    async def vector(self, query: Vector, flt: FactFilter, limit: int, min_score: float) -> Scored:
        match = fact_match(flt)
        if match is None or limit <= 0:
            return []

        async def atlas() -> Scored:
            stage = {
                "index": VECTOR_INDEX,
                "path": "embedding",
                "queryVector": [float(x) for x in query],
                "numCandidates": min(10_000, max(100, limit * 20)),
                "limit": min(limit, 10_000),
                "filter": match,
            }
            docs = await (await self._facts.aggregate([{"$vectorSearch": stage}])).to_list()
            scores = await cosine_scores(query, [doc["embedding"] for doc in docs])
            return _best(list(zip(docs, scores, strict=True)), limit, min_score)

        async def exact() -> Scored:
            rows = await self._facts.find(match, {"embedding": 1}).to_list()
            scores = await cosine_scores(query, [row["embedding"] for row in rows])
            best = _best(list(zip(rows, scores, strict=True)), limit, min_score)
            ids = [row["_id"] for row, _ in best]
            cursor = self._facts.find({"_id": {"$in": ids}}, {"embedding": 0})
            full = {doc["_id"]: doc async for doc in cursor}
            return [(full[row["_id"]], s) for row, s in best if row["_id"] in full]

        return await self._run(VECTOR_INDEX, atlas, exact)

    # ------------------------------------------------------------ text

    async def text(self, query: str, flt: FactFilter, limit: int) -> Scored:
        terms = list(dict.fromkeys(tokenize(query)))[:MAX_TERMS]
        match = fact_match(flt)
        if not terms or match is None or limit <= 0:
            return []
        words = " ".join(terms)

        async def atlas() -> Scored:
            search = {
                "index": TEXT_INDEX,
                "compound": {
                    "must": [{"text": {"query": words, "path": "content"}}],
                    "filter": search_filter(flt),
                },
            }
            pipeline: list[Doc] = [
                {"$search": search},
                {"$limit": CANDIDATE_CAP},
                {"$project": {"embedding": 0}},
            ]
            docs = await (await self._facts.aggregate(pipeline)).to_list()
            return await self._rank(terms, match, docs, limit)

        async def classic() -> Scored:
            # Ids first, then the documents: mongoeco mangles any other projection of a $text
            # query, and the vectors are not worth fetching.
            cursor = (
                self._facts.find({**match, "$text": {"$search": words}}, {"_id": 1})
                .sort([("score", {"$meta": "textScore"})])
                .limit(CANDIDATE_CAP)
            )
            ids = [doc["_id"] async for doc in cursor]
            docs = await self._facts.find({"_id": {"$in": ids}}, {"embedding": 0}).to_list()
            return await self._rank(terms, match, docs, limit)

        return await self._run(TEXT_INDEX, atlas, classic)

    async def _rank(self, terms: list[str], match: Doc, docs: list[Doc], limit: int) -> Scored:
        if not docs:
            return []
        n_docs = await self._facts.count_documents(match)
        scores = bm25(terms, {doc["_id"]: doc["content"] for doc in docs}, n_docs)
        return _best([(doc, scores[doc["_id"]]) for doc in docs if scores[doc["_id"]] > 0], limit)
