"""Fact search of the MongoDB store: Atlas ($vectorSearch, $search) or $text + numpy.

The server only selects candidates; their scores are the shared ones (memory.store.ranking):
exact cosine of the stored embeddings, and the shared BM25 (memory.store.rules.text) with N the
count of the facts the filter lets through. ``$text`` scores are not BM25 (mongoeco scores every
match 1.0) and ``$search`` returns no searchScore on mongoeco. Words match exactly (case and
diacritics folded): unlike SQLite's porter tokenizer, neither $text with language "none" nor
lucene.standard stems, so a candidate holds a query word, and BM25 counts its stems. Neither
splits a run of CJK characters as the shared tokenizer does (into bigrams): the facts holding
one are also found by their words, kept in a field of their own (indexes.CJK_TERMS).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Literal

import structlog
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import OperationFailure

from memory.models import FactFilter
from memory.store.base import Vector
from memory.store.mongo.docs import NO_VECTOR, Doc, by_ids
from memory.store.mongo.indexes import CJK_TERMS, TEXT_INDEX, VECTOR_INDEX
from memory.store.ranking import best, cosine_scores, text_hits
from memory.store.rules.filters import scope_branches
from memory.store.rules.text import CANDIDATE_CAP, bm25, has_cjk, query_parts, query_terms

log = structlog.get_logger(__name__)

Scored = list[tuple[Doc, float]]
AtlasMode = Literal["auto", "on", "off"]


def fact_match(flt: FactFilter, *, valid_only: bool = True) -> Doc | None:
    """The valid facts (all, unless valid_only) a filter lets through, in the operator subset
    $vectorSearch's filter accepts ($and/$or/$eq); None when it lets nothing through."""
    branches = [
        {"$and": [{field: {"$eq": value}} for field, value in branch.fields().items()]}
        for branch in scope_branches(flt)
    ]
    if not branches:
        return None
    validity: list[Doc] = [{"invalidated": {"$eq": False}}] if valid_only else []
    return {"$and": [{"agent_id": {"$eq": flt.agent_id}}, *validity, {"$or": branches}]}


def search_filter(flt: FactFilter) -> list[Doc]:
    """The same filter as $search compound.filter clauses (only when fact_match is not None)."""
    branches = [
        {"compound": {"filter": [_equals(f, v) for f, v in branch.fields().items()]}}
        for branch in scope_branches(flt)
    ]
    return [
        _equals("agent_id", flt.agent_id),
        _equals("invalidated", False),
        {"compound": {"should": branches, "minimumShouldMatch": 1}},
    ]


def _equals(path: str, value: object) -> Doc:
    return {"equals": {"path": path, "value": value}}


def _best(scored: Scored, limit: int, min_score: float = -math.inf) -> Scored:
    """Vector hits: equal scores by id."""
    return best(sorted(scored, key=lambda item: item[0]["_id"]), limit, min_score)


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

    async def _run[T](
        self, index: str, atlas: Callable[[], Awaitable[T]], fallback: Callable[[], Awaitable[T]]
    ) -> T:
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
        if match is None:
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
            cursor = self._facts.find(by_ids(ids), NO_VECTOR)
            full = {doc["_id"]: doc async for doc in cursor}
            return [(full[row["_id"]], s) for row, s in best if row["_id"] in full]

        return await self._run(VECTOR_INDEX, atlas, exact)

    # ------------------------------------------------------------ text

    async def text(self, query: str, flt: FactFilter, limit: int) -> Scored:
        terms = query_terms(query)
        match = fact_match(flt)
        if not terms or match is None:
            return []
        alone, phrases = query_parts(query)
        # A CJK term (a bigram) is left to _cjk_ids: $text holds none, and lucene.standard
        # would find every fact holding one of its characters.
        words = " ".join(t for t in alone if not has_cjk(t))

        async def atlas() -> list[object]:
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
                {"$project": {"_id": 1}},
            ]
            return [doc["_id"] for doc in await (await self._facts.aggregate(pipeline)).to_list()]

        async def classic() -> list[object]:
            # Ids only: mongoeco mangles any other projection of a $text query, and the
            # vectors are not worth fetching.
            cursor = (
                self._facts.find({**match, "$text": {"$search": words}}, {"_id": 1})
                .sort([("score", {"$meta": "textScore"})])
                .limit(CANDIDATE_CAP)
            )
            return [doc["_id"] async for doc in cursor]

        async def by_words() -> list[object]:
            return await self._run(TEXT_INDEX, atlas, classic) if words else []

        found = await asyncio.gather(
            by_words(),
            self._cjk_ids(alone, match),
            *(self._phrase_ids(phrase, match) for phrase in phrases),
        )
        ids = list(dict.fromkeys(fact_id for ids in found for fact_id in ids))
        if not ids:
            return []
        docs = self._facts.find(by_ids(ids), NO_VECTOR)
        return await self._rank(terms, match, await docs.sort("ins", -1).to_list(), limit)

    async def _cjk_ids(self, terms: list[str], match: Doc) -> list[object]:
        """The newest facts (at most CANDIDATE_CAP) whose CJK_TERMS hold a query term: the
        facts holding CJK characters, which their content's indexes do not split (a bigram, or
        a word written against a CJK run)."""
        return await self._newest_ids({**match, CJK_TERMS: {"$in": terms}})

    async def _phrase_ids(self, phrase: tuple[str, ...], match: Doc) -> list[object]:
        """The newest facts (at most CANDIDATE_CAP) holding the phrase's words next to each
        other, apart by what is not a word ("A-17", "$55,007"; rules.text.query_parts): $text
        finds those holding its longest word, a regex of their content keeps the phrase's (the
        index keeps no positions; Atlas' lucene.standard reads "55,007" as one number)."""
        longest = max(phrase, key=len)
        near = r"\W+".join(re.escape(word) for word in phrase)
        query = {
            **match,
            "$text": {"$search": longest},
            "content": {"$regex": rf"(?:^|\W){near}(?:$|\W)", "$options": "i"},
        }
        return await self._newest_ids(query)

    async def _newest_ids(self, query: Doc) -> list[object]:
        cursor = self._facts.find(query, {"_id": 1}).sort("ins", -1).limit(CANDIDATE_CAP)
        return [doc["_id"] async for doc in cursor]

    async def _rank(self, terms: list[str], match: Doc, docs: list[Doc], limit: int) -> Scored:
        if not docs:
            return []
        n_docs = await self._facts.count_documents(match)
        scores = bm25(terms, {doc["_id"]: doc["content"] for doc in docs}, n_docs)
        return text_hits([(doc, scores[doc["_id"]]) for doc in docs], limit)
