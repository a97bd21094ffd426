"""How the domain models are laid out as MongoDB documents, both ways.

Timestamps are stored as fixed-width ISO-8601 UTC strings ("2025-01-02T03:04:05.123456+00:00"),
not BSON dates: BSON dates keep milliseconds only, and the contract returns exactly the timestamps
it was given. The fixed width keeps string order equal to time order, so range queries, $max and
the cold-session index work on them as on dates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
from bson import ObjectId

from memory.errors import InvalidInputError
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    SessionAgentState,
    SessionInfo,
    StoredMessage,
)
from memory.store.base_lifecycle import Vector
from memory.store.mongo.indexes import CJK_TERMS, cjk_terms
from memory.store.records import (
    from_record,
    history_of,
    known,
    scope_key_of,
    session_of,
    state_of,
    stored_history,
    to_record,
)
from memory.store.rules.derived import dedup_user

Doc = dict[str, Any]

# Fact documents carry their vector; models and most reads do not need it.
NO_VECTOR = {"embedding": 0}


def vector_doc(vector: Sequence[float] | Vector) -> list[float]:
    """A vector as stored in a document: its float32 values (memory.store.base.Vector), as
    SQLite and PostgreSQL keep it, so that one commit reads back, exports and scores the same on
    every backend. BSON has doubles only: each holds its float32 value exactly. Reads take a
    vector through it too, so documents written before with float64 values read the same."""
    return [float(x) for x in np.asarray(vector, dtype=np.float32).reshape(-1)]


EMBEDDING_META_ID = "embedding"  # the meta document of the stored (model, dimension)


def compound_id(*parts: str) -> str:
    """The _id of a document keyed by several strings (an embedding's model and text hash, an
    erasure's agent and user): joined by the unit separator, which ids and hashes never hold."""
    return "\x1f".join(parts)


def insertion_order() -> ObjectId:
    """Tie-breaker for equal timestamps: ObjectIds made by one process increase, like rowids.
    Its time (whole seconds, the inserting process's clock) is also when the fact was inserted
    (memory.store.rules.recheck); every version of mnemos writes one."""
    return ObjectId()


def inserted_from(since: datetime) -> ObjectId:
    """The least insertion order made at or after ``since`` (its second, the rest zero)."""
    return ObjectId.from_datetime(since)


def by_ids(ids: Iterable[Any]) -> Doc:
    """The documents of these _ids."""
    return {"_id": {"$in": list(ids)}}


def view_of(session_id: str, agent_id: str) -> Doc:
    """The agent's session_agents document: its view of the session."""
    return {"session_id": session_id, "agent_id": agent_id}


def matching(**fields: str | None) -> Doc:
    """Documents whose fields equal those given (None: any value)."""
    return {name: value for name, value in fields.items() if value is not None}


def past(fields: Sequence[str], key: Sequence[Any], side: str = "$gt") -> Doc:
    """The documents strictly past ``key`` in the order of ``fields`` (a keyset page's bound):
    after it, or before it with side "$lt"."""
    branches = []
    for i, field in enumerate(fields):  # equal up to field i, past the key at it
        branches.append(dict(zip(fields[:i], key[:i], strict=True)) | {field: {side: key[i]}})
    return {"$or": branches}


def ts(value: datetime) -> str:
    if value.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware (UTC)")
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def opt_ts(value: datetime | None) -> str | None:
    return None if value is None else ts(value)


def dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


def opt_dt(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def fact_fields(fact: Fact) -> Doc:
    """A fact's stored fields but its id, vector, access counters and insertion order."""
    fields = to_record(fact, ts, exclude={"fact_id", "access_count", "last_accessed_at"})
    # A field of the document, which a process of the previous version passes over (it reads
    # the fields it knows); in the history, inside each revision's said_at (memory.store.records).
    fields["history"] = stored_history(fact.history, ts)
    derived = {"user_key": dedup_user(fact.scope, fact.user_id), CJK_TERMS: cjk_terms(fact.content)}
    return fields | derived | {"invalidated": fact.invalidated_at is not None}


def state_doc(state: SessionAgentState) -> Doc:
    return to_record(state, ts)


def message_doc(message: StoredMessage, weighted_tokens: float) -> Doc:
    return to_record(message, ts) | {"weighted_tokens": weighted_tokens}


def agent_from_doc(doc: Mapping[str, Any]) -> AgentConfig:
    return AgentConfig.model_validate(known(AgentConfig, doc))


def fact_from_doc(doc: Mapping[str, Any]) -> Fact:
    history = history_of(doc.get("history", ()))
    return from_record(Fact, doc, dt, fact_id=doc["_id"], history=history)


def fact_and_vector(doc: Mapping[str, Any]) -> tuple[Fact, list[float]]:
    return fact_from_doc(doc), vector_doc(doc["embedding"])


def message_from_doc(doc: Mapping[str, Any]) -> StoredMessage:
    return from_record(StoredMessage, doc, dt)


def session_from_doc(doc: Mapping[str, Any], mine: Mapping[str, Any] | None = None) -> SessionInfo:
    """The session; with the agent's session_agents document ``mine``, that agent's view."""
    agent = None if mine is None else (mine.get("ended_at"), mine.get("user_ids", []))
    return session_of(doc, dt, doc.get("user_ids", []), agent, session_id=doc["_id"])


def state_from_doc(doc: Mapping[str, Any]) -> SessionAgentState:
    return state_of(doc, dt)


def reflection_doc(reflection: Reflection) -> Doc:
    """A new reflection, buffered (not yet absorbed into any blob)."""
    key = reflection.scope_key
    fields = to_record(reflection, ts, exclude={"reflection_id", "scope_key"})
    stored = {"_id": reflection.reflection_id, "scope_key": key.key, **to_record(key, ts)}
    return stored | fields | {"absorbed_into_version": None, "ins": insertion_order()}


def consolidated_doc(blob: ConsolidatedMemory) -> Doc:
    """A blob; its _id is its scope key's (written by replacing the document)."""
    return to_record(blob.scope_key, ts) | to_record(blob, ts, exclude={"scope_key"})


def reflection_from_doc(doc: Mapping[str, Any]) -> Reflection:
    key = scope_key_of(doc)
    return from_record(Reflection, doc, dt, reflection_id=doc["_id"], scope_key=key)


def consolidated_from_doc(doc: Mapping[str, Any]) -> ConsolidatedMemory:
    return from_record(ConsolidatedMemory, doc, dt, scope_key=scope_key_of(doc))
