"""What a planner asks a backend to write, in order, inside the backend's own transaction.

Each write names its effect in domain terms; a backend turns it into SQL or MongoDB updates and
nothing else (no check, no derived value: those are the planner's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.api_keys import ApiKey
from memory.degraded import DegradedKey, DegradedWindow
from memory.formation_commit import FormationCommitResult
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
    SessionAgentState,
    StoredMessage,
)
from memory.store.rules.lifecycle_writes import LifecycleWrite


@dataclass(frozen=True)
class PutFact:
    """Insert (new) or overwrite the fact's fields (all but access_count/last_accessed_at);
    embedding None keeps the stored vector. Every fact write is stamped so caches re-read it."""

    fact: Fact
    embedding: Sequence[float] | None
    new: bool = False


@dataclass(frozen=True)
class SetEmbeddingMeta:
    """The first vectors fix the model and dimension of the store."""

    model: str
    dimension: int


@dataclass(frozen=True)
class InsertReflections:
    """New buffered reflections (ids known not to exist)."""

    reflections: tuple[Reflection, ...]


@dataclass(frozen=True)
class MoveCursor:
    """The (session, agent) row takes this state's cursor, pending counters and formations."""

    state: SessionAgentState


@dataclass(frozen=True)
class BumpScopeVersions:
    """+1 (created at 1) on each key, in this (sorted) order."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class RecordFormation:
    """Remember the result under its formation id: a replay returns it."""

    result: FormationCommitResult
    committed_at: datetime


@dataclass(frozen=True)
class RecordDegraded:
    """The committed window's degraded steps (memory/degraded.py); a stored key is left as it is."""

    windows: tuple[DegradedWindow, ...]


@dataclass(frozen=True)
class MarkReformed:
    """These records (by their key) re-formed at ``at``."""

    keys: tuple[DegradedKey, ...]
    at: datetime


@dataclass(frozen=True)
class CreateSession:
    session_id: str
    created_at: datetime


@dataclass(frozen=True)
class AddSessionAgent:
    """The agent joins the session with this state (at its head, nothing pending, not ended)."""

    state: SessionAgentState


@dataclass(frozen=True)
class SetSwitchMarks:
    """The agent's state in the session keeps these marks of the memory switches its messages
    were recorded under, and the switches of those since (memory/switch_marks.py)."""

    session_id: str
    agent_id: str
    marks: tuple[tuple[int, bool, bool], ...]
    recorded_under: tuple[bool, bool] | None  # None: none open yet (an import's marks)


@dataclass(frozen=True)
class AddSessionUsers:
    """Users speaking in the session, in join order: added to the session's users and to the
    participants of each of its agents (already present ones are left alone)."""

    session_id: str
    user_ids: tuple[str, ...]


@dataclass(frozen=True)
class MarkGuests:
    """A guest spoke in the session (rules.derived.said_by_guest): the session has guests, for
    each of its agents, now and later (SessionInfo.has_guests; set again, it stays set)."""

    session_id: str


@dataclass(frozen=True)
class NewMessage:
    message: StoredMessage
    # Kept per message so that pending counters can be recomputed after a cursor move without
    # the recording call's settings.
    weighted_tokens: float


@dataclass(frozen=True)
class InsertMessages:
    messages: tuple[NewMessage, ...]


@dataclass(frozen=True)
class AdvanceSession:
    """The session's head moves to last_seq/last_message_at; every agent of the session gets
    the new messages added to its pending counters (and the head copied, where stored), and
    is no longer purged: memory formed of what is said now is the session's again, purged
    anew once the session ends again."""

    session_id: str
    last_seq: int
    last_message_at: datetime
    messages: int
    weighted_tokens: float


@dataclass(frozen=True)
class PutConsolidated:
    blob: ConsolidatedMemory


@dataclass(frozen=True)
class AbsorbReflections:
    key: ScopeKey
    reflection_ids: tuple[str, ...]
    version: int | None  # None: back in the buffer (a set-aside reflection edited)


@dataclass(frozen=True)
class SetReflectionContent:
    reflection_id: str
    content: str


@dataclass(frozen=True)
class DeleteReflection:
    reflection_id: str


@dataclass(frozen=True)
class PutAgent:
    """Register the agent, or replace its whole configuration."""

    config: AgentConfig


@dataclass(frozen=True)
class PutApiKey:
    """Insert (new) or overwrite the key's record (the hash of its secret, never the secret)."""

    key: ApiKey
    new: bool = False


@dataclass(frozen=True)
class MarkPurged:
    """The agent's session memory of the session is gone; ending the session again clears it."""

    session_id: str
    agent_id: str


@dataclass(frozen=True)
class SwapSideVectors:
    """Every fact takes its side vector of ``model`` and ``model``; the embedding meta becomes
    (model, dimension); the side vectors go (rules.reembed checked that each fact has one)."""

    model: str
    dimension: int


Write = (
    PutFact
    | SetEmbeddingMeta
    | InsertReflections
    | MoveCursor
    | BumpScopeVersions
    | RecordFormation
    | RecordDegraded
    | MarkReformed
    | CreateSession
    | AddSessionAgent
    | SetSwitchMarks
    | AddSessionUsers
    | MarkGuests
    | InsertMessages
    | AdvanceSession
    | PutConsolidated
    | AbsorbReflections
    | SetReflectionContent
    | DeleteReflection
    | LifecycleWrite
    | PutAgent
    | PutApiKey
    | SwapSideVectors
    | MarkPurged
)


@dataclass(frozen=True)
class Plan[R]:
    """The writes to apply, in order, and what the store call returns once they are."""

    writes: tuple[Write, ...]
    result: R


class Request[S]:
    """What a planner needs read, inside the transaction that applies its plan; S is the
    snapshot type the backend answers with."""

    def serialized_on(self) -> tuple[str, ...]:
        """Keys ("agent:<id>", "user:<id>") naming data the plan decides on that a concurrent
        call may change by writing documents this call only reads: two calls sharing a key must
        not both commit. The rule is written once, here and in the overrides. SQLite (one
        writer) and PostgreSQL (SERIALIZABLE) already serialize such calls and ignore it; a
        snapshot-isolated backend (MongoDB: transactions conflict only on a document both
        write) writes one document per key, so that transactions sharing a key conflict.
        Empty unless a request overrides it."""
        return ()


def user_key(user_id: str) -> str:
    """The serialization key of a user's memory: their erasure epochs (rules.erasure)."""
    return "user:" + user_id
