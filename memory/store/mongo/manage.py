"""The management reads of the MongoDB backend (operators, backend UIs): list and count facts,
list reflections. Edits and deletes are planned (memory.store.planned)."""

from __future__ import annotations

from pymongo import DESCENDING
from pymongo.asynchronous.database import AsyncDatabase

from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.mongo.docs import NO_VECTOR, Doc, fact_from_doc, reflection_from_doc
from memory.store.mongo.reads import reflection
from memory.store.mongo.search import fact_match
from memory.store.planned import PlannedStore


class MongoManagement(PlannedStore):
    """The management half of MongoStore, which sets ``_db``."""

    _db: AsyncDatabase[Doc]

    async def list_facts(
        self, flt: FactFilter, *, include_invalid: bool = False, offset: int = 0, limit: int = 50
    ) -> list[Fact]:
        match = fact_match(flt, valid_only=not include_invalid)
        if match is None or limit <= 0:
            return []
        cursor = (
            self._db.facts.find(match, NO_VECTOR)
            .sort([("updated_at", DESCENDING), ("ins", DESCENDING)])
            .skip(max(offset, 0))
            .limit(limit)
        )
        return [fact_from_doc(doc) async for doc in cursor]

    async def count_facts(self, flt: FactFilter) -> int:
        match = fact_match(flt)
        return 0 if match is None else await self._db.facts.count_documents(match)

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await reflection(self._db, reflection_id)

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        if limit <= 0:
            return []
        query: Doc = {"scope_key": key.key}
        if not include_absorbed:
            query["absorbed_into_version"] = None
        cursor = (
            self._db.reflections.find(query)
            .sort([("formed_at", DESCENDING), ("ins", DESCENDING)])
            .limit(limit)
        )
        return [reflection_from_doc(doc) async for doc in cursor]
