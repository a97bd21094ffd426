"""A formation's commit: everything one formation writes, applied at once with the cursor move,
or not at all (MemoryStore.commit_formation; its rules in memory/store/rules/formation.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from memory.degraded import DegradedWindow
from memory.models import (
    DomainModel,
    FactScope,
    Id,
    Reflection,
    SessionAgentState,
    SourceIds,
    StoredInt,
    UtcDatetime,
)


class FactAdd(DomainModel):
    op: Literal["add"] = "add"
    fact_id: str = Field(
        description="Deterministic: derived from the formation id and the fact's index"
    )
    scope: FactScope
    user_id: Id | None = None
    content: str
    embedding: list[float]
    source_message_ids: SourceIds = ()
    said_at: UtcDatetime | None = None


class FactUpdate(DomainModel):
    op: Literal["update"] = "update"
    fact_id: str = Field(description="The existing fact")
    expected_version: StoredInt = Field(
        description="The version the decision saw; a newer one makes the decision stale"
    )
    content: str
    embedding: list[float]
    reason: str = ""
    source_message_ids: SourceIds = ()
    said_at: UtcDatetime | None = None


class FactInvalidate(DomainModel):
    """DELETE of the decision: the old fact is kept, marked invalid, and replaced by ``replaced_by``."""

    op: Literal["invalidate"] = "invalidate"
    fact_id: str
    expected_version: StoredInt
    replaced_by: str = Field(description="fact_id of the FactAdd in the same commit")
    reason: str = ""


class FactKeep(DomainModel):
    """NONE of the decision: the new fact is already known as this stored one, so its text is
    not written again; but the new statement is dropped only if that fact is still what the
    decision read (an update or invalidation since makes the decision stale, as for FactUpdate).
    Said after the fact was, the statement is its latest: the fact takes its time and cites it
    (memory/store/rules/fact_ops.py), so that what was said in between, learnt late, does not
    replace it. Keeps of older workers' payloads carry neither: nothing moves."""

    op: Literal["keep"] = "keep"
    fact_id: str
    expected_version: StoredInt
    source_message_ids: SourceIds = ()
    said_at: UtcDatetime | None = None


FactOp = Annotated[FactAdd | FactUpdate | FactInvalidate | FactKeep, Field(discriminator="op")]


class AddRecheck(DomainModel):
    """What the decisions of a commit saw: its adds are checked against the facts committed
    since, so that concurrent formations of one new fact converge on one fact."""

    candidates_read_at: UtcDatetime
    seen: dict[str, StoredInt] = Field(
        default_factory=dict, description="fact id -> version shown to the decision"
    )
    similarity: float = Field(ge=0, le=1, description="The dedup candidate threshold")
    floors: dict[str, float] = Field(
        default_factory=dict,
        description="add fact id -> similarity of the last candidate shown, when its list was "
        "full: a fact less similar would not have been shown either",
    )


class FormationCommit(DomainModel):
    """Everything one formation writes, applied at once with the cursor move, or not at all."""

    formation_id: str = Field(description="session + agent + message range: the idempotency key")
    session_id: Id
    agent_id: Id
    expected_cursor: StoredInt = Field(
        ge=0, description="The cursor must still be here (the range start)"
    )
    new_cursor: StoredInt = Field(ge=0, description="The range end (last seq formed)")
    embedding_model: str
    fact_ops: list[FactOp] = Field(default_factory=list)
    reflections: list[Reflection] = Field(default_factory=list)
    committed_at: UtcDatetime
    user_epochs: dict[str, StoredInt] = Field(
        default_factory=dict,
        description="Erasure epoch of each user of the window when it was loaded (forget_user): "
        "a commit for a user erased since writes no memory",
    )
    recheck: AddRecheck | None = Field(
        None, description="Re-check the adds against facts committed since the candidates read"
    )
    embedded_text_hashes: list[str] = Field(
        default_factory=list
    )  # cache keys of its texts: see rules.erasure
    # The window's degraded steps (memory/degraded.py): recorded with its memories, or not at all.
    degraded: list[DegradedWindow] = Field(default_factory=list)


class FormationCommitResult(DomainModel):
    formation_id: str
    already_committed: bool = False
    facts_added: int = 0
    facts_updated: int = 0
    facts_invalidated: int = 0
    facts_duplicate: int = 0
    reflections_added: int = 0
    discarded_for_erasure: bool = False
    buffered: dict[str, int] = Field(
        default_factory=dict, description="Unabsorbed count per touched scope key"
    )
    state: SessionAgentState | None = None
