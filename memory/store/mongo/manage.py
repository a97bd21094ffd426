"""The management methods of the MongoDB backend (operators, backend UIs): list, edit, delete.

A person's edit or delete is one transaction that also bumps the scope key's version, so context
caches drop what they hold; the checks (unknown, deleted, absorbed, duplicate) raise inside it and
abort it, leaving nothing written.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
from pymongo import DESCENDING
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
)
from memory.ids import content_hash
from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.base import MemoryStore, Vector
from memory.store.mongo_docs import (
    NO_VECTOR,
    Doc,
    fact_from_doc,
    fact_scope_key,
    reflection_from_doc,
    ts,
)
from memory.store.mongo_formation import (
    EMBEDDING_META_ID,
    bump_versions,
    revision,
    rewrite_update,
)
from memory.store.mongo_search import fact_match
from memory.store.mongo_txn import run_transaction


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
        if not content.strip():
            raise InvalidInputError("a fact cannot be empty")
        vector = [float(x) for x in np.asarray(embedding, dtype=np.float32).reshape(-1)]
        hash_ = content_hash(content)
        stamp = ts(at)
        db = self._db

        async def body(session: AsyncClientSession) -> Fact:
            doc = await _load_fact(db, fact_id, session)
            if doc["invalidated"]:
                raise ConflictError(f"fact {fact_id} was deleted: it can no longer be edited")
            meta = await db.meta.find_one({"_id": EMBEDDING_META_ID}, session=session)
            stored = None if meta is None else (meta["model"], int(meta["dimension"]))
            if stored != (embedding_model, len(vector)):
                raise EmbeddingMismatchError(
                    f"edit has {embedding_model}/{len(vector)}, stored facts have "
                    f"{'nothing' if stored is None else f'{stored[0]}/{stored[1]}'}"
                )
            duplicate = await db.facts.find_one(
                {
                    "agent_id": doc["agent_id"],
                    "user_key": doc["user_key"],
                    "scope": doc["scope"],
                    "hash": hash_,
                    "invalidated": False,
                    "_id": {"$ne": fact_id},
                },
                {"_id": 1},
                session=session,
            )
            if duplicate is not None:
                raise ConflictError(f"fact {fact_id} would duplicate fact {duplicate['_id']}")
            update = rewrite_update(
                doc, content=content, hash_=hash_, embedding=vector,
                embedding_model=embedding_model, at=stamp, reason=reason,
            )  # fmt: skip
            await db.facts.update_one({"_id": fact_id}, update, session=session)
            await bump_versions(db, [_scope_key(doc)], session)
            return fact_from_doc(await _load_fact(db, fact_id, session))

        return await run_transaction(db, body)

    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        stamp = ts(at)
        db = self._db

        async def body(session: AsyncClientSession) -> Fact:
            doc = await _load_fact(db, fact_id, session)
            if doc["invalidated"]:
                return fact_from_doc(doc)  # deleted already: nothing more to record
            await db.facts.update_one(
                {"_id": fact_id},
                {
                    "$set": {"invalidated": True, "invalidated_at": stamp},
                    "$push": {"history": revision(doc, at=stamp, reason=reason)},
                },
                session=session,
            )
            await bump_versions(db, [_scope_key(doc)], session)
            return fact_from_doc(await _load_fact(db, fact_id, session))

        return await run_transaction(db, body)

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        doc = await self._db.reflections.find_one({"_id": reflection_id})
        return None if doc is None else reflection_from_doc(doc)

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
        if not content.strip():
            raise InvalidInputError("a reflection cannot be empty")
        db = self._db

        async def body(session: AsyncClientSession) -> Reflection:
            current = await _buffered_reflection(db, reflection_id, "edit", session)
            await db.reflections.update_one(
                {"_id": reflection_id}, {"$set": {"content": content}}, session=session
            )
            await bump_versions(db, [current.scope_key.key], session)
            return current.model_copy(update={"content": content})

        return await run_transaction(db, body)

    async def delete_reflection(self, reflection_id: str) -> None:
        db = self._db

        async def body(session: AsyncClientSession) -> None:
            current = await _buffered_reflection(db, reflection_id, "delete", session)
            await db.reflections.delete_one({"_id": reflection_id}, session=session)
            await bump_versions(db, [current.scope_key.key], session)

        await run_transaction(db, body)


def _scope_key(doc: Doc) -> str:
    return fact_scope_key(doc["scope"], doc["agent_id"], doc.get("user_id"))


async def _load_fact(db: AsyncDatabase[Doc], fact_id: str, session: AsyncClientSession) -> Doc:
    doc = await db.facts.find_one({"_id": fact_id}, NO_VECTOR, session=session)
    if doc is None:
        raise NotFoundError(f"no fact {fact_id}")
    return doc


async def _buffered_reflection(
    db: AsyncDatabase[Doc], reflection_id: str, action: str, session: AsyncClientSession
) -> Reflection:
    doc = await db.reflections.find_one({"_id": reflection_id}, session=session)
    if doc is None:
        raise NotFoundError(f"no reflection {reflection_id}")
    reflection = reflection_from_doc(doc)
    if reflection.absorbed_into_version is not None:
        raise ConflictError(
            f"cannot {action} reflection {reflection_id}: it is already absorbed into version "
            f"{reflection.absorbed_into_version} of {reflection.scope_key.key} (edit that instead)"
        )
    return reflection
