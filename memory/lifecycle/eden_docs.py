"""Eden's memory documents as the seeds describe them, both generations, read leniently.

v1 (seed 000 §2, 001 "Existing Collections"): ``memory_sessions`` (SessionMemory: one extracted
episode / directive / fact / suggestion), ``memory_user`` (UserMemory: the consolidated blob per
agent and user), ``memory_agent`` (AgentMemory: one shard of the agent's collective memory).
memory2 (seed 002 "Data Models"): ``memory2_facts``, ``memory2_reflections``,
``memory2_consolidated``. Ids are BSON ObjectIds and dates naive UTC; both become plain values
here. Fields the seeds do not name are ignored; a document missing a field the mapping needs
fails validation and is dropped with that reason, never half-imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from memory.lifecycle.records import as_utc

V1_SESSIONS = "memory_sessions"
V1_USERS = "memory_user"
V1_AGENTS = "memory_agent"
V2_FACTS = "memory2_facts"
V2_REFLECTIONS = "memory2_reflections"
V2_CONSOLIDATED = "memory2_consolidated"
COLLECTIONS = (V1_SESSIONS, V1_USERS, V1_AGENTS, V2_FACTS, V2_REFLECTIONS, V2_CONSOLIDATED)


def plain(value: Any) -> Any:
    """ObjectIds → hex strings, naive datetimes → UTC, recursively; BSON types stay out of the models."""
    if isinstance(value, datetime):
        return as_utc(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # ObjectId, UUID, Decimal128: their string form is the id


def id_time(raw_id: Any) -> datetime | None:
    """An ObjectId's creation time: the only date some v1 documents carry."""
    when = getattr(raw_id, "generation_time", None)
    return as_utc(when) if isinstance(when, datetime) else None


class EdenDoc(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    id: str = Field(alias="_id")
    created_at: datetime | None = Field(None, description="Or the ObjectId's time")


# ---------------------------------------------------------------- v1


class SessionMemoryDoc(EdenDoc):
    agent_id: str
    source_session_id: str | None = None
    memory_type: str
    content: str = ""
    source_message_ids: list[str] = []
    related_users: list[str] = []
    shard_id: str | None = None
    agent_owner: str | None = None


class UserMemoryDoc(EdenDoc):
    agent_id: str
    user_id: str
    content: str | None = None
    unabsorbed_memory_ids: list[str] = []
    fully_formed_memory: str | None = None
    last_updated_at: datetime | None = None


class AgentMemoryDoc(EdenDoc):
    agent_id: str
    shard_name: str | None = None
    extraction_prompt: str | None = None
    is_active: bool = True
    content: str | None = None
    unabsorbed_memory_ids: list[str] = []
    facts: list[str] = []
    fully_formed_memory: str | None = None
    last_updated_at: datetime | None = None


# ---------------------------------------------------------------- memory2

Scope2 = Literal["agent", "user", "session"]


class UpdateEntry(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    content: str
    updated_at: datetime | None = None
    reason: str = ""


class Memory2FactDoc(EdenDoc):
    content: str
    hash: str | None = None
    embedding: list[float] | None = None
    embedding_model: str | None = None
    # 002 stores one scope; 001 §9.1 drafted a list ("user" and "agent" at once).
    scope: Literal["user", "agent"] | list[Literal["user", "agent"]]
    agent_id: str
    user_id: str | None = None
    session_id: str | None = None
    source_session_id: str | None = None
    formed_at: datetime | None = None
    updated_at: datetime | None = None
    access_count: int = 0
    last_accessed_at: datetime | None = None
    version: int = 1
    previous_content: str | None = None
    update_history: list[UpdateEntry] = []


class Memory2ReflectionDoc(EdenDoc):
    content: str
    scope: Scope2 | list[Scope2]
    agent_id: str
    user_id: str | None = None
    session_id: str | None = None
    source_session_id: str | None = None
    absorbed: bool = False
    formed_at: datetime | None = None


class Memory2ConsolidatedDoc(EdenDoc):
    # 002 names it ``scope``; 001 §9.3 ``scope_type``; 001 §5.3 nests the ids in ``scope_key``.
    scope: Scope2 | None = None
    scope_type: Scope2 | None = None
    scope_key: dict[str, str | None] | None = None
    agent_id: str | None = None
    user_id: str | None = None
    session_id: str | None = None
    consolidated_content: str = ""
    word_limit: int | None = None
    unabsorbed_ids: list[str] = []
    last_consolidated_at: datetime | None = None

    def key_fields(self) -> tuple[Scope2, str | None, str | None, str | None]:
        """(scope, agent_id, user_id, session_id), whichever way the document spells them."""
        nested = self.scope_key or {}
        agent = self.agent_id or nested.get("agent_id")
        user = self.user_id or nested.get("user_id")
        session = self.session_id or nested.get("session_id")
        scope = self.scope or self.scope_type
        if scope is None:
            scope = "session" if session else "user" if user else "agent"
        return scope, agent, user, session


class EdenAgentDocs(BaseModel):
    """One agent's documents from every collection that exists in the source database."""

    model_config = ConfigDict(frozen=True)

    agent_id: str
    sessions: list[SessionMemoryDoc] = []
    users: list[UserMemoryDoc] = []
    shards: list[AgentMemoryDoc] = []
    facts2: list[Memory2FactDoc] = []
    reflections2: list[Memory2ReflectionDoc] = []
    consolidated2: list[Memory2ConsolidatedDoc] = []
    invalid: list[tuple[str, str, str]] = Field(
        default=[], description="(collection, source id, validation error) of unreadable documents"
    )


_MODELS: dict[str, tuple[str, type[EdenDoc]]] = {
    V1_SESSIONS: ("sessions", SessionMemoryDoc),
    V1_USERS: ("users", UserMemoryDoc),
    V1_AGENTS: ("shards", AgentMemoryDoc),
    V2_FACTS: ("facts2", Memory2FactDoc),
    V2_REFLECTIONS: ("reflections2", Memory2ReflectionDoc),
    V2_CONSOLIDATED: ("consolidated2", Memory2ConsolidatedDoc),
}


def parse_agent_docs(
    agent_id: str, raw_docs: Iterable[tuple[str, Mapping[str, Any]]]
) -> EdenAgentDocs:
    """(collection, raw BSON document) pairs of one agent → typed documents; an unreadable one is
    kept aside with its first validation error instead of failing the agent."""
    parsed: dict[str, list[EdenDoc]] = {field: [] for field, _ in _MODELS.values()}
    invalid: list[tuple[str, str, str]] = []
    for collection, raw in raw_docs:
        field, model = _MODELS[collection]
        doc = plain(raw)
        if doc.get("created_at") is None:
            doc["created_at"] = id_time(raw.get("_id"))
        try:
            parsed[field].append(model.model_validate(doc))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            invalid.append((collection, str(doc.get("_id")), f"{where}: {first['msg']}"))
    return EdenAgentDocs.model_validate({"agent_id": agent_id, **parsed, "invalid": invalid})
