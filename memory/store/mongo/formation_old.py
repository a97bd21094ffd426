"""commit_formation of the MongoDB store: the body of one multi-document transaction.

Every check raises inside the transaction, which aborts it, so a failed check leaves nothing
written (facts, reflections, cursor, counters, meta). The semantics mirror the SQLite backend's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pymongo import DESCENDING
from pymongo.asynchronous.client_session import AsyncClientSession
from pymongo.asynchronous.database import AsyncDatabase

from memory.errors import (
    InvalidInputError,
    NotFoundError,
)
from memory.ids import content_hash
from memory.models import (
    FactAdd,
    FactInvalidate,
    FactUpdate,
    FormationCommit,
    FormationCommitResult,
)
from memory.store.commit_rules import (
    check_current,
    check_cursor,
    check_embedding_meta,
    commit_dimension,
)
from memory.store.mongo_docs import (
    Doc,
    fact_scope_key,
    insertion_order,
    reflection_doc,
    ts,
    user_key,
)
from memory.store.mongo_search import token_count
from memory.store.mongo_sessions import pending_after, read_state

EMBEDDING_META_ID = "embedding"


async def bump_versions(
    db: AsyncDatabase[Doc], keys: Iterable[str], session: AsyncClientSession
) -> None:
    for key in sorted(set(keys)):
        await db.scope_versions.update_one(
            {"_id": key}, {"$inc": {"version": 1}}, upsert=True, session=session
        )


async def commit_formation_tx(
    db: AsyncDatabase[Doc], session: AsyncClientSession, commit: FormationCommit
) -> FormationCommitResult:
    done = await db.formation_commits.find_one({"_id": commit.formation_id}, session=session)
    if done is not None:
        stored = FormationCommitResult.model_validate(done["result"])
        return stored.model_copy(update={"already_committed": True})

    check_cursor(await read_state(db, commit.session_id, commit.agent_id, session), commit)
    await _check_embeddings(db, session, commit)

    facts = _FactWriter(db, session, commit)
    await facts.apply()
    reflections_added, reflection_keys = await _insert_reflections(db, session, commit)
    await bump_versions(db, facts.touched | reflection_keys, session)

    count, tokens = await pending_after(db, commit.session_id, commit.new_cursor, session)
    await db.session_agents.update_one(
        {"session_id": commit.session_id, "agent_id": commit.agent_id},
        {
            "$set": {
                "cursor_seq": commit.new_cursor,
                "pending_messages": count,
                "pending_weighted_tokens": tokens,
            },
            "$inc": {"formations": 1},
        },
        session=session,
    )
    buffered = {
        key: await db.reflections.count_documents(
            {"scope_key": key, "absorbed_into_version": None}, session=session
        )
        for key in sorted(reflection_keys)
    }
    outcome = FormationCommitResult(
        formation_id=commit.formation_id,
        facts_added=facts.counts["added"],
        facts_updated=facts.counts["updated"],
        facts_invalidated=facts.counts["invalidated"],
        facts_duplicate=facts.counts["duplicate"],
        reflections_added=reflections_added,
        buffered=buffered,
        state=await read_state(db, commit.session_id, commit.agent_id, session),
    )
    await db.formation_commits.insert_one(
        {
            "_id": commit.formation_id,
            "committed_at": ts(commit.committed_at),
            "result": outcome.model_dump(mode="json"),
        },
        session=session,
    )
    return outcome


async def _check_embeddings(
    db: AsyncDatabase[Doc], session: AsyncClientSession, commit: FormationCommit
) -> None:
    """All vectors of the commit share the stored model and dimension (the first commit sets
    them)."""
    dimension = commit_dimension(commit)
    if dimension is None:
        return
    meta = await db.meta.find_one({"_id": EMBEDDING_META_ID}, session=session)
    if meta is None:
        await db.meta.insert_one(
            {"_id": EMBEDDING_META_ID, "model": commit.embedding_model, "dimension": dimension},
            session=session,
        )
    else:
        check_embedding_meta(commit, dimension, (meta["model"], meta["dimension"]))


def revision(doc: Doc, *, at: str, reason: str) -> Doc:
    """The history entry that closes the fact's current version."""
    return {
        "version": doc["version"],
        "content": doc["content"],
        "changed_at": at,
        "reason": reason,
    }


def rewrite_update(
    doc: Doc,
    *,
    content: str,
    hash_: str,
    embedding: list[float],
    embedding_model: str,
    at: str,
    reason: str,
) -> Doc:
    """The update making a new version of the fact with this content, valid, its old content
    kept in history."""
    return {
        "$set": {
            "content": content,
            "hash": hash_,
            "n_tokens": token_count(content),
            "embedding": embedding,
            "embedding_model": embedding_model,
            "updated_at": at,
            "previous_content": doc["content"],
            "invalidated": False,
            "invalidated_at": None,
            "invalidated_by": None,
        },
        "$inc": {"version": 1},
        "$push": {"history": revision(doc, at=at, reason=reason)},
    }


class _FactWriter:
    """Applies the fact ops: adds and updates in order, then invalidations, whose replacement
    (an add of this commit) may have resolved to an existing fact (duplicate or revived)."""

    def __init__(
        self, db: AsyncDatabase[Doc], session: AsyncClientSession, commit: FormationCommit
    ) -> None:
        self.facts = db.facts
        self.session = session
        self.commit = commit
        self.at = ts(commit.committed_at)
        self.resolved: dict[str, str] = {}  # FactAdd.fact_id -> the fact that holds its content
        self.counts = {"added": 0, "updated": 0, "invalidated": 0, "duplicate": 0}
        self.touched: set[str] = set()

    async def apply(self) -> None:
        for op in self.commit.fact_ops:
            if isinstance(op, FactAdd):
                await self._add(op)
            elif isinstance(op, FactUpdate):
                await self._update(op)
        for op in self.commit.fact_ops:
            if isinstance(op, FactInvalidate):
                await self._invalidate(op)

    def _touch(self, doc: Doc) -> None:
        self.touched.add(fact_scope_key(doc["scope"], doc["agent_id"], doc.get("user_id")))

    async def _current(self, fact_id: str, expected_version: int) -> Doc:
        doc = await self.facts.find_one({"_id": fact_id}, session=self.session)
        if doc is None or doc["agent_id"] != self.commit.agent_id:
            raise NotFoundError(f"no fact {fact_id} of agent {self.commit.agent_id}")
        check_current(
            fact_id,
            version=doc["version"],
            invalidated=bool(doc["invalidated"]),
            expected_version=expected_version,
        )
        return doc

    async def _find(
        self, scope: str, user_id: str | None, hash_: str, *, valid: bool
    ) -> Doc | None:
        found = await self.facts.find_one(
            {
                "agent_id": self.commit.agent_id,
                "user_key": user_key(scope, user_id),
                "scope": scope,
                "hash": hash_,
                "invalidated": not valid,
            },
            sort=[("invalidated_at", DESCENDING)],
            session=self.session,
        )
        return found

    async def _rewrite(
        self, doc: Doc, content: str, embedding: list[float], reason: str, hash_: str
    ) -> None:
        update = rewrite_update(
            doc, content=content, hash_=hash_, embedding=embedding,
            embedding_model=self.commit.embedding_model, at=self.at, reason=reason,
        )  # fmt: skip
        await self.facts.update_one({"_id": doc["_id"]}, update, session=self.session)
        self._touch(doc)

    async def _add(self, op: FactAdd) -> None:
        if (op.scope == "user") != (op.user_id is not None):
            raise InvalidInputError(f"fact {op.fact_id}: user scope needs a user_id, agent none")
        hash_ = content_hash(op.content)
        duplicate = await self._find(op.scope, op.user_id, hash_, valid=True)
        if duplicate is not None:
            self.resolved[op.fact_id] = duplicate["_id"]
            self.counts["duplicate"] += 1
            return
        invalidated = await self._find(op.scope, op.user_id, hash_, valid=False)
        if invalidated is not None:
            await self._rewrite(invalidated, op.content, op.embedding, "revived", hash_)
            self.resolved[op.fact_id] = invalidated["_id"]
            self.counts["added"] += 1
            return
        if await self.facts.count_documents({"_id": op.fact_id}, session=self.session):
            raise InvalidInputError(f"fact id {op.fact_id} is already used")
        doc: dict[str, Any] = {
            "_id": op.fact_id,
            "agent_id": self.commit.agent_id,
            "user_id": op.user_id,
            "user_key": user_key(op.scope, op.user_id),
            "scope": op.scope,
            "content": op.content,
            "hash": hash_,
            "n_tokens": token_count(op.content),
            "embedding": op.embedding,
            "embedding_model": self.commit.embedding_model,
            "source_session_id": self.commit.session_id,
            "formed_at": self.at,
            "updated_at": self.at,
            "version": 1,
            "previous_content": None,
            "history": [],
            "invalidated": False,
            "invalidated_at": None,
            "invalidated_by": None,
            "access_count": 0,
            "last_accessed_at": None,
            "ins": insertion_order(),
        }
        await self.facts.insert_one(doc, session=self.session)
        self.resolved[op.fact_id] = op.fact_id
        self.counts["added"] += 1
        self._touch(doc)

    async def _update(self, op: FactUpdate) -> None:
        doc = await self._current(op.fact_id, op.expected_version)
        hash_ = content_hash(op.content)
        duplicate = None
        if hash_ != doc["hash"]:
            duplicate = await self._find(doc["scope"], doc.get("user_id"), hash_, valid=True)
        if duplicate is None:
            await self._rewrite(doc, op.content, op.embedding, op.reason, hash_)
            self.counts["updated"] += 1
            return
        # The new content is another valid fact's: the two are one fact now; keep that one.
        await self._mark_invalid(doc, duplicate["_id"])
        self.counts["duplicate"] += 1

    async def _invalidate(self, op: FactInvalidate) -> None:
        doc = await self._current(op.fact_id, op.expected_version)
        replacement = self.resolved.get(op.replaced_by)
        if replacement is None:
            raise InvalidInputError(f"{op.replaced_by} is not a fact added by this commit")
        if replacement == doc["_id"]:
            # The replacement turned out to be this very fact (same content): nothing to replace.
            return
        await self._mark_invalid(doc, replacement)
        self.counts["invalidated"] += 1

    async def _mark_invalid(self, doc: Doc, replaced_by: str) -> None:
        await self.facts.update_one(
            {"_id": doc["_id"]},
            {
                "$set": {
                    "invalidated": True,
                    "invalidated_at": self.at,
                    "invalidated_by": replaced_by,
                }
            },
            session=self.session,
        )
        self._touch(doc)


async def _insert_reflections(
    db: AsyncDatabase[Doc], session: AsyncClientSession, commit: FormationCommit
) -> tuple[int, set[str]]:
    """Insert by id, existing ids left alone; returns (inserted, scope keys of the reflections)."""
    keys: set[str] = set()
    docs: dict[str, Doc] = {}
    for reflection in commit.reflections:
        if reflection.scope_key.agent_id != commit.agent_id:
            raise InvalidInputError(f"reflection {reflection.reflection_id} of another agent")
        keys.add(reflection.scope_key.key)
        docs.setdefault(reflection.reflection_id, reflection_doc(reflection))
    if not docs:
        return 0, keys
    existing = {
        doc["_id"]
        async for doc in db.reflections.find(
            {"_id": {"$in": list(docs)}}, {"_id": 1}, session=session
        )
    }
    new = [doc for rid, doc in docs.items() if rid not in existing]
    if new:
        # An insert error inside a transaction aborts it, hence the read above.
        await db.reflections.insert_many(new, session=session)
    return len(new), keys
