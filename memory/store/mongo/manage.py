"""The management methods of the MongoDB backend (operators, backend UIs): list, edit, delete.

A person's edit or delete is planned by memory.store.rules and applied in one transaction; the
planner's checks (unknown, deleted, absorbed, duplicate) raise inside it and abort it.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
from pymongo import DESCENDING
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.ids import content_hash
from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.base import MemoryStore, Vector
from memory.store.mongo.docs import NO_VECTOR, Doc, fact_from_doc, reflection_from_doc
from memory.store.mongo.reads import find_facts, read_embedding_meta
from memory.store.mongo.search import fact_match
from memory.store.mongo.txn import run_transaction
from memory.store.mongo.writes import apply_writes
from memory.store.rules import (
    plan_delete_reflection,
    plan_edit_fact,
    plan_edit_reflection,
    plan_invalidate_fact,
)


class MongoManagement(MemoryStore):
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

    async def edit_fact(
        self,
        fact_id: str,
        *,
        content: str,
        embedding: Vector,
        embedding_model: str,
        at: datetime,
        reason: str = "manual edit",
    ) -> Fact:
        vector = [float(x) for x in np.asarray(embedding, dtype=np.float32).reshape(-1)]
        db = self._db

        async def body(session: AsyncClientSession) -> Fact:
            fact = await _fact(db, fact_id, session)
            same = (
                []
                if fact is None
                else await find_facts(
                    db, {"agent_id": fact.agent_id, "hash": content_hash(content)}, session
                )
            )
            plan = plan_edit_fact(
                fact_id, content=content, embedding=vector, embedding_model=embedding_model,
                at=at, reason=reason, fact=fact, same_content=same,
                embedding_meta=await read_embedding_meta(db, session),
            )  # fmt: skip
            await apply_writes(db, session, plan.writes)
            return plan.result

        return await run_transaction(db, body)

    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        db = self._db

        async def body(session: AsyncClientSession) -> Fact:
            fact = await _fact(db, fact_id, session)
            plan = plan_invalidate_fact(fact_id, at=at, reason=reason, fact=fact)
            await apply_writes(db, session, plan.writes)
            return plan.result

        return await run_transaction(db, body)

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await _reflection(self._db, reflection_id, None)

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

    async def edit_reflection(self, reflection_id: str, *, content: str) -> Reflection:
        db = self._db

        async def body(session: AsyncClientSession) -> Reflection:
            current = await _reflection(db, reflection_id, session)
            plan = plan_edit_reflection(reflection_id, content, current)
            await apply_writes(db, session, plan.writes)
            return plan.result

        return await run_transaction(db, body)

    async def delete_reflection(self, reflection_id: str) -> None:
        db = self._db

        async def body(session: AsyncClientSession) -> None:
            plan = plan_delete_reflection(
                reflection_id, await _reflection(db, reflection_id, session)
            )
            await apply_writes(db, session, plan.writes)

        await run_transaction(db, body)


async def _fact(db: AsyncDatabase[Doc], fact_id: str, session: AsyncClientSession) -> Fact | None:
    return next(iter(await find_facts(db, {"_id": fact_id}, session)), None)


async def _reflection(
    db: AsyncDatabase[Doc], reflection_id: str, session: AsyncClientSession | None
) -> Reflection | None:
    doc = await db.reflections.find_one({"_id": reflection_id}, session=session)
    return None if doc is None else reflection_from_doc(doc)
