"""The writes of the data-lifecycle planners (imports, forget_user), beside rules.writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.models import AgentConfig, Reflection


class LifecycleOp:
    """Base of these writes: a backend hands them all to its lifecycle module."""


@dataclass(frozen=True)
class InsertAgents(LifecycleOp):
    configs: tuple[AgentConfig, ...]


@dataclass(frozen=True)
class SetFactAccess(LifecycleOp):
    """An imported fact keeps its access count."""

    fact_id: str
    access_count: int
    last_accessed_at: datetime | None


@dataclass(frozen=True)
class ImportReflections(LifecycleOp):
    """Reflections as imported, absorbed_into_version included (ids known not to exist)."""

    reflections: tuple[Reflection, ...]


@dataclass(frozen=True)
class SetSessionHead(LifecycleOp):
    """The session's (and each of its agents') last seq and last message time."""

    session_id: str
    last_seq: int
    last_message_at: datetime


@dataclass(frozen=True)
class PutErasure(LifecycleOp):
    """The tombstone of (agent or "*", user): its epoch, when, and what was deleted (counts)."""

    agent_key: str
    user_id: str
    epoch: int
    forgotten_at: datetime
    counts_json: str


@dataclass(frozen=True)
class DeleteFacts(LifecycleOp):
    """Hard delete, with text-index rows (none of their terms left in the index), vectors,
    re-embedding side vectors and history (the vector caches reload)."""

    agent_id: str
    fact_ids: tuple[str, ...]


@dataclass(frozen=True)
class DeleteScope(LifecycleOp):
    """Every reflection (buffered or absorbed) and the blob of one scope key."""

    key: str


@dataclass(frozen=True)
class DeleteSessions(LifecycleOp):
    """Whole sessions: messages, agents' states, users, session-scope reflections and blobs,
    their degraded windows (whose reasons may quote the model's output about the user), and
    the records of their formations (ids starting with these "agent:session:" prefixes): a
    session id used again restarts its seqs, and its first window's formation id would find
    the old record and be taken as committed, nothing written, the cursor never moved."""

    session_ids: tuple[str, ...]
    formations: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeleteUserMessages(LifecycleOp):
    """One user's messages in a session the others keep, and the user's participation; the
    reasons of the session's degraded windows become degraded.ERASED_REASON (they may quote
    the model's output about the user). With ``seqs``, only the user's messages of these seqs,
    and the user only among the participants of ``agents``: the others are kept for other
    agents (rules.withheld), and so is the user's place among the session's users."""

    session_id: str
    user_id: str
    seqs: tuple[int, ...] | None = None  # None: every message of the user
    agents: tuple[str, ...] = ()  # with seqs: whose participants lose the user


@dataclass(frozen=True)
class DeleteReplies(LifecycleOp):
    """A session's messages carrying no user id (the agents' replies, their tools' output) of
    these seqs: the side of a conversation of a user who was alone in the session that goes
    with them (rules.erasure.plan_forget)."""

    session_id: str
    seqs: tuple[int, ...]


@dataclass(frozen=True)
class SetWithheld(LifecycleOp):
    """The (session, agent) row's withheld map (SessionAgentState.withheld) becomes this one."""

    session_id: str
    agent_id: str
    withheld: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class DeleteEmbeddings(LifecycleOp):
    """Embedding cache entries of these text hashes, for every model."""

    text_hashes: tuple[str, ...]


LifecycleWrite = (
    InsertAgents
    | SetFactAccess
    | ImportReflections
    | SetSessionHead
    | PutErasure
    | DeleteFacts
    | DeleteScope
    | DeleteSessions
    | DeleteUserMessages
    | DeleteReplies
    | SetWithheld
    | DeleteEmbeddings
)
