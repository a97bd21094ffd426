"""What the data-lifecycle calls of the store (imports, forget_user) return: counts only, never
content, so that they can be logged and kept as an audit record."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    StoredMessage,
    UtcDatetime,
)

BlobImport = Literal["inserted", "existing", "conflict", "forgotten"]

# A session of an import's session memory, with the agents and users the file's messages show in
# it: whether forget_user deleted it whole is judged in the import's own transaction.
SessionPeople = tuple[str, tuple[str, ...], tuple[str, ...]]  # (session, agents, users)


class ImportCounts(BaseModel):
    inserted: int = 0
    existing: int = Field(0, description="Same id already there (a re-run)")
    duplicate: int = Field(0, description="Another valid fact with the same agent/user/scope/text")
    conflict: int = Field(0, description="e.g. a message seq taken by another message")
    forgotten: int = Field(0, description="The user has an erasure tombstone: never re-imported")
    buffered: dict[str, int] = Field(
        default_factory=dict, description="Unabsorbed reflections per touched scope key"
    )

    def __add__(self, other: ImportCounts) -> ImportCounts:
        return ImportCounts(
            inserted=self.inserted + other.inserted,
            existing=self.existing + other.existing,
            duplicate=self.duplicate + other.duplicate,
            conflict=self.conflict + other.conflict,
            forgotten=self.forgotten + other.forgotten,
            buffered=self.buffered | other.buffered,
        )


class ForgetCounts(BaseModel):
    """What one agent's forget_user transaction deleted."""

    agent_id: str
    user_id: str
    epoch: int = Field(description="The user's erasure epoch for this agent after the call")
    facts: int = Field(0, description="Valid and invalidated, with their history")
    reflections: int = Field(0, description="User-scope reflections, buffered and absorbed")
    blobs: int = 0
    messages: int = 0
    sessions: int = Field(0, description="Sessions deleted whole (the user was their only user)")
    embedding_cache: int = 0
    # The scope keys of the session memory deleted (those of the session tombstones): the caller
    # deletes those sessions' runs from Temporal (runtime.erasure), a consolidation's being tagged
    # with no user. Ids, yet out of the counts' JSON (the tombstone's audit record, the answer).
    session_scopes: tuple[str, ...] = Field((), exclude=True)


class Erasure(BaseModel):
    """An erasure tombstone as stored (rules.erasure): whose (``agent_key``: an agent, "*" for
    every agent, or the scope key of a session memory the forget deleted), the epoch, when, and
    the counts of what went. Ids and counts only, never content: an export carries it so that a
    store moved by export and import still never imports the forgotten user again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent_key: str
    user_id: str
    epoch: int
    forgotten_at: UtcDatetime
    counts: dict[str, Any] = Field(default_factory=dict)


class ExportData(BaseModel):
    """What ``mnemos export`` writes, read in one consistent snapshot."""

    agents: list[AgentConfig] = []
    facts: list[tuple[Fact, list[float]]] = []  # with their vectors
    reflections: list[Reflection] = []
    consolidated: list[ConsolidatedMemory] = []
    messages: list[StoredMessage] = []
    erasures: list[Erasure] = []
