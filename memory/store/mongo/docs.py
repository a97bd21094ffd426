"""How the domain models are laid out as MongoDB documents, both ways.

Timestamps are stored as fixed-width ISO-8601 UTC strings ("2025-01-02T03:04:05.123456+00:00"),
not BSON dates: BSON dates keep milliseconds only, and the contract returns exactly the timestamps
it was given. The fixed width keeps string order equal to time order, so range queries, $max and
the cold-session index work on them as on dates.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from bson import ObjectId

from memory.errors import InvalidInputError
from memory.models import (
    ConsolidatedMemory,
    Fact,
    FactRevision,
    Reflection,
    ScopeKey,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.rules import token_count

Doc = dict[str, Any]

# Fact documents carry their vector; models and most reads do not need it.
NO_VECTOR = {"embedding": 0}


def insertion_order() -> ObjectId:
    """Tie-breaker for equal timestamps: ObjectIds made by one process increase, like rowids."""
    return ObjectId()


def ts(value: datetime) -> str:
    if value.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware (UTC)")
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


def opt_dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def user_key(scope: str, user_id: str | None) -> str:
    """The user part of a fact's dedup key: agent-scoped facts are shared by every user, so a
    user_id on one of them must not split its duplicates."""
    return (user_id or "") if scope == "user" else ""


def fact_fields(fact: Fact) -> Doc:
    """A fact's stored fields but its vector, access counters and insertion order."""
    return {
        "agent_id": fact.agent_id,
        "user_id": fact.user_id,
        "user_key": user_key(fact.scope, fact.user_id),
        "scope": fact.scope,
        "content": fact.content,
        "hash": fact.hash,
        "n_tokens": token_count(fact.content),
        "embedding_model": fact.embedding_model,
        "source_session_id": fact.source_session_id,
        "formed_at": ts(fact.formed_at),
        "updated_at": ts(fact.updated_at),
        "version": fact.version,
        "previous_content": fact.previous_content,
        "history": [
            {
                **rev.model_dump(include={"version", "content", "reason"}),
                "changed_at": ts(rev.changed_at),
            }
            for rev in fact.history
        ],
        "invalidated": fact.invalidated_at is not None,
        "invalidated_at": None if fact.invalidated_at is None else ts(fact.invalidated_at),
        "invalidated_by": fact.invalidated_by,
    }


def state_doc(state: SessionAgentState) -> Doc:
    return {
        **state.model_dump(exclude={"last_message_at"}),
        "last_message_at": None if state.last_message_at is None else ts(state.last_message_at),
    }


def message_doc(message: StoredMessage, weighted_tokens: float) -> Doc:
    return {
        **message.model_dump(exclude={"created_at"}),
        "created_at": ts(message.created_at),
        "weighted_tokens": weighted_tokens,
    }


def fact_from_doc(doc: Mapping[str, Any]) -> Fact:
    return Fact(
        fact_id=doc["_id"],
        agent_id=doc["agent_id"],
        user_id=doc.get("user_id"),
        scope=doc["scope"],
        content=doc["content"],
        hash=doc["hash"],
        embedding_model=doc["embedding_model"],
        source_session_id=doc.get("source_session_id"),
        formed_at=dt(doc["formed_at"]),
        updated_at=dt(doc["updated_at"]),
        version=doc["version"],
        previous_content=doc.get("previous_content"),
        history=tuple(
            FactRevision(
                version=rev["version"],
                content=rev["content"],
                changed_at=dt(rev["changed_at"]),
                reason=rev.get("reason", ""),
            )
            for rev in doc.get("history", ())
        ),
        invalidated_at=opt_dt(doc.get("invalidated_at")),
        invalidated_by=doc.get("invalidated_by"),
        access_count=doc.get("access_count", 0),
        last_accessed_at=opt_dt(doc.get("last_accessed_at")),
    )


def message_from_doc(doc: Mapping[str, Any]) -> StoredMessage:
    return StoredMessage(
        session_id=doc["session_id"],
        seq=doc["seq"],
        message_id=doc["message_id"],
        role=doc["role"],
        content=doc["content"],
        created_at=dt(doc["created_at"]),
        user_id=doc.get("user_id"),
        name=doc.get("name"),
        agent_id=doc.get("agent_id"),
    )


def session_from_doc(doc: Mapping[str, Any]) -> SessionInfo:
    return SessionInfo(
        session_id=doc["_id"],
        agent_ids=tuple(doc.get("agent_ids", ())),
        user_ids=tuple(doc.get("user_ids", ())),
        created_at=dt(doc["created_at"]),
        last_message_at=opt_dt(doc.get("last_message_at")),
        ended_at=opt_dt(doc.get("ended_at")),
    )


def state_from_doc(doc: Mapping[str, Any]) -> SessionAgentState:
    return SessionAgentState(
        session_id=doc["session_id"],
        agent_id=doc["agent_id"],
        cursor_seq=doc["cursor_seq"],
        last_seq=doc["last_seq"],
        pending_messages=doc["pending_messages"],
        # Sums of float $inc can drift a hair below zero; the model rejects negatives.
        pending_weighted_tokens=max(0.0, float(doc["pending_weighted_tokens"])),
        last_message_at=opt_dt(doc.get("last_message_at")),
        formations=doc["formations"],
    )


def reflection_doc(reflection: Reflection) -> Doc:
    """A new reflection, buffered (not yet absorbed into any blob)."""
    key = reflection.scope_key
    return {
        "_id": reflection.reflection_id,
        "scope_key": key.key,
        "scope": key.scope,
        "agent_id": key.agent_id,
        "user_id": key.user_id,
        "session_id": key.session_id,
        "content": reflection.content,
        "source_session_id": reflection.source_session_id,
        "formed_at": ts(reflection.formed_at),
        "absorbed_into_version": None,
        "ins": insertion_order(),
    }


def _scope_key_from_doc(doc: Mapping[str, Any]) -> ScopeKey:
    return ScopeKey(
        scope=doc["scope"],
        agent_id=doc["agent_id"],
        user_id=doc.get("user_id"),
        session_id=doc.get("session_id"),
    )


def reflection_from_doc(doc: Mapping[str, Any]) -> Reflection:
    return Reflection(
        reflection_id=doc["_id"],
        scope_key=_scope_key_from_doc(doc),
        content=doc["content"],
        source_session_id=doc["source_session_id"],
        formed_at=dt(doc["formed_at"]),
        absorbed_into_version=doc.get("absorbed_into_version"),
    )


def consolidated_from_doc(doc: Mapping[str, Any]) -> ConsolidatedMemory:
    return ConsolidatedMemory(
        scope_key=_scope_key_from_doc(doc),
        content=doc["content"],
        version=doc["version"],
        word_limit=doc["word_limit"],
        updated_at=dt(doc["updated_at"]),
        edited_by=doc.get("edited_by", "consolidation"),
    )
