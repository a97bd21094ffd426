"""The import calls, planned: insert by deterministic id what is not there yet, so that running
an import again writes nothing twice and an interrupted one resumes where it stopped. A user
with an erasure tombstone is never imported again."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    SessionAgentState,
    StoredMessage,
)
from memory.store.counts import BlobImport, ImportCounts
from memory.store.rules.derived import fact_scope_key
from memory.store.rules.erasure import ALL_AGENTS
from memory.store.rules.lifecycle_writes import (
    ImportReflections,
    InsertAgents,
    SetFactAccess,
    SetSessionHead,
)
from memory.store.rules.writes import (
    AddSessionAgent,
    AddSessionUsers,
    BumpScopeVersions,
    CreateSession,
    InsertMessages,
    MoveCursor,
    NewMessage,
    Plan,
    PutConsolidated,
    PutFact,
    Request,
    SetEmbeddingMeta,
    Write,
)

Pair = tuple[str, str]  # (agent, user)


def users_by_agent(pairs: Iterable[Pair]) -> dict[str, list[str]]:
    """The users of each agent among (agent, user) pairs: erasure epochs are read per agent."""
    grouped: dict[str, list[str]] = {}
    for agent_id, user_id in pairs:
        grouped.setdefault(agent_id, []).append(user_id)
    return grouped


def _erased(epochs: Mapping[Pair, int], agent_id: str, user_id: str | None) -> bool:
    return user_id is not None and epochs.get((agent_id, user_id), 0) > 0


# ---------------------------------------------------------------- agents


@dataclass(frozen=True)
class AgentsRequest(Request[frozenset[str]]):
    """Which of these agents exist."""

    agent_ids: tuple[str, ...]


def plan_import_agents(
    configs: Sequence[AgentConfig], existing: frozenset[str]
) -> Plan[ImportCounts]:
    new = {c.agent_id: c for c in configs if c.agent_id not in existing}
    writes: tuple[Write, ...] = (InsertAgents(tuple(new.values())),) if new else ()
    return Plan(writes, ImportCounts(inserted=len(new), existing=len(configs) - len(new)))


# ---------------------------------------------------------------- facts


@dataclass(frozen=True)
class FactImportSnapshot:
    existing: frozenset[str]  # ids among the request's
    valid: frozenset[tuple[str, str, str, str]]  # (agent, user or "", scope, hash) of valid facts
    embedding_meta: tuple[str, int] | None
    epochs: Mapping[Pair, int]


@dataclass(frozen=True)
class FactImportRequest(Request[FactImportSnapshot]):
    fact_ids: tuple[str, ...]
    hashes: tuple[Pair, ...]  # (agent, hash): the agent's facts with these contents
    pairs: tuple[Pair, ...]  # (agent, user): their erasure epochs


def fact_import_request(facts: Sequence[Fact]) -> FactImportRequest:
    return FactImportRequest(
        fact_ids=tuple(dict.fromkeys(f.fact_id for f in facts)),
        hashes=tuple(dict.fromkeys((f.agent_id, f.hash) for f in facts)),
        pairs=tuple(dict.fromkeys((f.agent_id, f.user_id) for f in facts if f.user_id)),
    )


def dedup_key(fact: Fact) -> tuple[str, str, str, str]:
    """What two valid facts may not share: agent, user ("" for none), scope, content hash."""
    return (fact.agent_id, fact.user_id or "", fact.scope, fact.hash)


def plan_import_facts(
    facts: Sequence[Fact], vectors: Sequence[Sequence[float]], snapshot: FactImportSnapshot
) -> Plan[ImportCounts]:
    """Insert each fact (with its history, invalidation and access counts) whose id is absent.
    Vectors follow commit_formation's rule: one model and dimension, the store's."""
    if len(facts) != len(vectors):
        raise InvalidInputError(f"{len(facts)} facts but {len(vectors)} vectors")
    writes: list[Write] = []
    if facts:
        meta = ({f.embedding_model for f in facts}, {len(v) for v in vectors})
        if len(meta[0]) != 1 or len(meta[1]) != 1 or 0 in meta[1]:
            raise EmbeddingMismatchError(f"facts of several models or dimensions: {meta}")
        wanted = (meta[0].pop(), meta[1].pop())
        if snapshot.embedding_meta is None:
            writes.append(SetEmbeddingMeta(*wanted))
        elif snapshot.embedding_meta != wanted:
            raise EmbeddingMismatchError(
                f"import has {wanted[0]}/{wanted[1]}, stored facts have "
                f"{snapshot.embedding_meta[0]}/{snapshot.embedding_meta[1]}"
            )
    counts = ImportCounts()
    seen, valid, touched = set(snapshot.existing), set(snapshot.valid), set[str]()
    for fact, vector in zip(facts, vectors, strict=True):
        if fact.fact_id in seen:
            counts.existing += 1
        elif _erased(snapshot.epochs, fact.agent_id, fact.user_id):
            counts.forgotten += 1
        elif fact.invalidated_at is None and dedup_key(fact) in valid:
            counts.duplicate += 1
        else:
            seen.add(fact.fact_id)
            if fact.invalidated_at is None:
                valid.add(dedup_key(fact))
            writes.append(PutFact(fact, list(vector), new=True))
            if fact.access_count or fact.last_accessed_at is not None:
                writes.append(SetFactAccess(fact.fact_id, fact.access_count, fact.last_accessed_at))
            touched.add(fact_scope_key(fact))
            counts.inserted += 1
    if touched:
        writes.append(BumpScopeVersions(tuple(sorted(touched))))
    return Plan(tuple(writes), counts)


# ---------------------------------------------------------------- blobs and reflections


@dataclass(frozen=True)
class BlobImportSnapshot:
    stored: Mapping[str, tuple[str, int]]  # scope key -> (content, version)
    epochs: Mapping[Pair, int]


@dataclass(frozen=True)
class BlobImportRequest(Request[BlobImportSnapshot]):
    keys: tuple[str, ...]
    pairs: tuple[Pair, ...]


def plan_import_consolidated(
    blobs: Sequence[ConsolidatedMemory], snapshot: BlobImportSnapshot
) -> Plan[dict[str, BlobImport]]:
    """A scope without a blob takes the imported one; the live blob wins any conflict."""
    outcome: dict[str, BlobImport] = {}
    writes: list[Write] = []
    for blob in blobs:
        key = blob.scope_key
        stored = snapshot.stored.get(key.key)
        if key.key in outcome:
            continue
        if _erased(snapshot.epochs, key.agent_id, key.user_id):
            outcome[key.key] = "forgotten"
        elif stored is None:
            outcome[key.key] = "inserted"
            writes.append(PutConsolidated(blob))
        else:
            outcome[key.key] = "existing" if stored == (blob.content, blob.version) else "conflict"
    inserted = sorted(k for k, v in outcome.items() if v == "inserted")
    if inserted:
        writes.append(BumpScopeVersions(tuple(inserted)))
    return Plan(tuple(writes), outcome)


@dataclass(frozen=True)
class ReflectionImportSnapshot:
    existing: frozenset[str]
    buffered: Mapping[str, int]  # scope key -> unabsorbed count before the call
    epochs: Mapping[Pair, int]


@dataclass(frozen=True)
class ReflectionImportRequest(Request[ReflectionImportSnapshot]):
    reflection_ids: tuple[str, ...]
    keys: tuple[str, ...]
    pairs: tuple[Pair, ...]


def plan_import_reflections(
    reflections: Sequence[Reflection], snapshot: ReflectionImportSnapshot
) -> Plan[ImportCounts]:
    counts = ImportCounts()
    new: dict[str, Reflection] = {}
    for r in reflections:
        key = r.scope_key
        if r.reflection_id in snapshot.existing or r.reflection_id in new:
            counts.existing += 1
        elif _erased(snapshot.epochs, key.agent_id, key.user_id):
            counts.forgotten += 1
        else:
            new[r.reflection_id] = r
    counts.inserted = len(new)
    buffered = dict(snapshot.buffered)
    for r in new.values():
        if r.absorbed_into_version is None:
            buffered[r.scope_key.key] = buffered.get(r.scope_key.key, 0) + 1
    counts.buffered = buffered
    writes: list[Write] = []
    if new:
        writes.append(ImportReflections(tuple(new.values())))
        writes.append(BumpScopeVersions(tuple(sorted({r.scope_key.key for r in new.values()}))))
    return Plan(tuple(writes), counts)


# ---------------------------------------------------------------- messages

# Imported messages count as formed (the cursor moves past them); their weighted tokens are
# only kept for pending recounts, at weight 1.
_CHARS_PER_TOKEN = 4.0


def erased_in_session(epochs: Mapping[Pair, int], agent_ids: Sequence[str], user_id: str) -> bool:
    """Whether forget_user deleted the user's messages in a session of these agents: all of them
    go, whichever agent recorded them, when the user is forgotten for any agent of the session.
    A session of no known agent is checked against the all-agents erasure only."""
    return any(epochs.get((a, user_id), 0) > 0 for a in agent_ids or (ALL_AGENTS,))


def gone_with_users(
    epochs: Mapping[Pair, int], agent_ids: Sequence[str], user_ids: Sequence[str]
) -> bool:
    """Whether forget_user deleted the session whole, with its agents' states and session memory:
    it had users, and each was forgotten for each of its agents (rules.erasure.plan_forget takes
    a session whole when its only user goes for its only agent, or for every agent). ``epochs``:
    the effective epoch of every (agent, user) pair, (ALL_AGENTS, user) for no known agent."""
    agents = agent_ids or (ALL_AGENTS,)
    return bool(user_ids) and all(epochs.get((a, u), 0) > 0 for a in agents for u in user_ids)


@dataclass(frozen=True)
class SessionImportSnapshot:
    exists: bool
    last_seq: int
    last_message_at: datetime | None
    user_ids: tuple[str, ...]
    states: Mapping[str, SessionAgentState]  # by agent
    stored: Mapping[str, int]  # message id -> seq, of the request's ids
    stored_all: tuple[int, float]  # (count, weighted tokens) of every stored message
    taken: frozenset[int]  # of the request's seqs, those held by a stored message
    # Effective erasure epochs of each agent (stored or the request's) with each user (stored
    # or the request's); (ALL_AGENTS, user) when there is no agent at all.
    epochs: Mapping[Pair, int]


@dataclass(frozen=True)
class SessionImportRequest(Request[SessionImportSnapshot]):
    session_id: str
    agent_ids: tuple[str, ...]
    user_ids: tuple[str, ...]
    message_ids: tuple[str, ...]
    seqs: tuple[int, ...]
    max_seq: int


def session_import_request(
    session_id: str, messages: Sequence[StoredMessage]
) -> SessionImportRequest:
    return SessionImportRequest(
        session_id=session_id,
        agent_ids=tuple(dict.fromkeys(m.agent_id for m in messages if m.agent_id)),
        user_ids=tuple(dict.fromkeys(m.user_id for m in messages if m.user_id)),
        message_ids=tuple(m.message_id for m in messages),
        seqs=tuple(m.seq for m in messages),
        max_seq=max(m.seq for m in messages),
    )


def _tokens(message: StoredMessage) -> int:
    return math.ceil(len(message.content) / _CHARS_PER_TOKEN)


def _formed_upto(
    state: SessionAgentState,
    new: Sequence[StoredMessage],
    stored_seqs: Sequence[int],
    max_seq: int,
) -> MoveCursor | None:
    """The agent's cursor past the imported messages, which count as formed, but never past a
    stored message it has not formed yet: that one, and everything after it, is formed as usual
    (the imported messages among them too: better formed twice, deduplicated, than never)."""
    unformed = [seq for seq in stored_seqs if seq > state.cursor_seq]
    if not unformed:
        # Nothing stored after the cursor: nothing is pending once it passes the file's messages.
        cursor, pending, tokens = max(state.cursor_seq, max_seq), 0, 0.0
    else:
        first = min(unformed)
        cursor = max([state.cursor_seq, *(m.seq for m in new if m.seq < first)])
        after = [m for m in new if m.seq > cursor]
        pending = state.pending_messages + len(after)
        tokens = state.pending_weighted_tokens + sum(_tokens(m) for m in after)
    update = {"cursor_seq": cursor, "pending_messages": pending, "pending_weighted_tokens": tokens}
    if all(getattr(state, k) == v for k, v in update.items()):
        return None
    return MoveCursor(state.model_copy(update=update))


def plan_import_session(
    req: SessionImportRequest,
    messages: Sequence[StoredMessage],
    snapshot: SessionImportSnapshot,
) -> Plan[ImportCounts]:
    """One session's messages by (session, message id), seqs kept; the session, its agents and
    users created as needed; each agent's cursor moved past the imported messages so that the
    cold-sessions job does not form them a second time.

    Never brings back what forget_user deleted: a session it deleted whole (its every user
    forgotten, ``gone_with_users``) is skipped whole, the agents' messages too; in another, a
    forgotten user's messages (``erased_in_session``), whatever their agent_id says. A stored
    session holding messages the file does not is another conversation under the same id (or
    has moved on since the export): the file's messages are conflicts and nothing is written,
    so that no agent's session gains users or loses unformed messages."""
    counts = ImportCounts()
    agents = tuple(dict.fromkeys((*snapshot.states, *req.agent_ids)))
    users = tuple(dict.fromkeys((*snapshot.user_ids, *req.user_ids)))
    gone = gone_with_users(snapshot.epochs, agents, users)
    disagree = snapshot.stored_all[0] > len(snapshot.stored)
    new: dict[str, StoredMessage] = {}
    seqs = set(snapshot.taken)
    for m in sorted(messages, key=lambda m: m.seq):
        if m.message_id in snapshot.stored or m.message_id in new:
            counts.existing += 1
        elif gone or (m.user_id and erased_in_session(snapshot.epochs, agents, m.user_id)):
            counts.forgotten += 1
        elif disagree or m.seq in seqs:
            counts.conflict += 1
        else:
            seqs.add(m.seq)
            new[m.message_id] = m
    counts.inserted = len(new)
    if not new:
        return Plan((), counts)
    first = min(new.values(), key=lambda m: m.seq)
    last_at = max(m.created_at for m in new.values())
    head_at = (
        last_at if snapshot.last_message_at is None else max(last_at, snapshot.last_message_at)
    )
    head_seq = max(snapshot.last_seq, req.max_seq)
    writes: list[Write] = []
    if not snapshot.exists:
        writes.append(CreateSession(req.session_id, first.created_at))
    # Here the stored session holds no message the file does not: ``stored`` is all of them.
    stored_seqs = tuple(snapshot.stored.values())
    for agent_id in agents:
        state = snapshot.states.get(agent_id)
        if state is None:
            # A new agent has formed none of the stored messages: all are pending for it.
            state = SessionAgentState(
                session_id=req.session_id, agent_id=agent_id, cursor_seq=0, last_seq=head_seq,
                pending_messages=snapshot.stored_all[0],
                pending_weighted_tokens=snapshot.stored_all[1], last_message_at=head_at,
            )  # fmt: skip
            writes.append(AddSessionAgent(state))
        if (move := _formed_upto(state, tuple(new.values()), stored_seqs, req.max_seq)) is not None:
            writes.append(move)
    # After the agents join: the users of the imported messages are the session's and each of its
    # agents' participants (the imported history is theirs), added once each.
    if new_users := tuple(dict.fromkeys(m.user_id for m in new.values() if m.user_id)):
        writes.append(AddSessionUsers(req.session_id, new_users))
    writes.append(InsertMessages(tuple(NewMessage(m, _tokens(m)) for m in new.values())))
    writes.append(SetSessionHead(req.session_id, head_seq, head_at))
    return Plan(tuple(writes), counts)
