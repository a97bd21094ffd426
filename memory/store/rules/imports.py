"""The import calls, planned: insert by deterministic id what is not there yet, so that running
an import again writes nothing twice and an interrupted one resumes where it stopped. A user
with an erasure tombstone is never imported again, nor session memory with a session tombstone
(rules.erasure.session_tombstones)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.models import (
    AgentConfig,
    ConsolidatedMemory,
    Fact,
    Reflection,
    ScopeKey,
)
from memory.store.counts import BlobImport, ImportCounts, SessionPeople
from memory.store.rules.derived import dedup_user, fact_scope_key
from memory.store.rules.import_erasures import Known
from memory.store.rules.lifecycle_writes import (
    ImportReflections,
    InsertAgents,
    SetFactAccess,
)
from memory.store.rules.writes import (
    BumpScopeVersions,
    Plan,
    PutConsolidated,
    PutFact,
    Request,
    SetEmbeddingMeta,
    Write,
    user_key,
)

Pair = tuple[str, str]  # (agent, user)


def users_by_agent(pairs: Iterable[Pair]) -> dict[str, list[str]]:
    """The users of each agent among (agent, user) pairs: erasure epochs are read per agent."""
    grouped: dict[str, list[str]] = {}
    for agent_id, user_id in pairs:
        grouped.setdefault(agent_id, []).append(user_id)
    return grouped


def epoch_keys(pairs: Iterable[Pair], sessions: Iterable[SessionPeople] = ()) -> tuple[str, ...]:
    """The serialization keys of the users whose epochs an import checks (Request.serialized_on):
    the pairs' and those the file gives its sessions. The users a session holds in the store are
    known only once read: they are not among them."""
    users = [u for _, u in pairs] + [u for _, _, people in sessions for u in people]
    return tuple(map(user_key, dict.fromkeys(users)))


def erased(epochs: Mapping[Pair, int], agent_id: str, user_id: str | None) -> bool:
    """The user was forgotten for the agent (``epochs``: effective, rules.erasure): nothing of
    theirs is imported."""
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
    # The tombstones the file carries (rules.import_erasures.unknown): those it knows of refuse
    # none of its records.
    known: Known = ()

    def serialized_on(self) -> tuple[str, ...]:
        return epoch_keys(self.pairs)


def fact_import_request(facts: Sequence[Fact], known: Known = ()) -> FactImportRequest:
    return FactImportRequest(
        fact_ids=tuple(dict.fromkeys(f.fact_id for f in facts)),
        hashes=tuple(dict.fromkeys((f.agent_id, f.hash) for f in facts)),
        pairs=tuple(dict.fromkeys((f.agent_id, f.user_id) for f in facts if f.user_id)),
        known=known,
    )


def dedup_key(fact: Fact) -> tuple[str, str, str, str]:
    """What two valid facts may not share: agent, user (rules.derived.dedup_user: none for an
    agent's own facts, shared by every user, whatever user id a file put on one), scope, content
    hash."""
    return (fact.agent_id, dedup_user(fact.scope, fact.user_id), fact.scope, fact.hash)


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
        elif erased(snapshot.epochs, fact.agent_id, fact.user_id):
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
    gone: frozenset[tuple[str, str]] = frozenset()  # (session, agent): memory forget deleted
    # Of the request's session keys, those with a session tombstone (rules.erasure).
    erased_scopes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BlobImportRequest(Request[BlobImportSnapshot]):
    keys: tuple[str, ...]
    pairs: tuple[Pair, ...]
    sessions: tuple[SessionPeople, ...] = ()
    session_keys: tuple[str, ...] = ()  # the session-scope ones among keys
    # The tombstones the file carries (rules.import_erasures.unknown): those it knows of refuse
    # none of its records.
    known: Known = ()

    def serialized_on(self) -> tuple[str, ...]:
        # A forget racing a write of session memory its tombstones would refuse bumps the same
        # scope version (both write it): one of them runs again after the other.
        return epoch_keys(self.pairs, self.sessions)


def session_keys(keys: Iterable[ScopeKey]) -> tuple[str, ...]:
    """The session-scope keys among ``keys``, whose session tombstones an import reads."""
    return tuple(dict.fromkeys(k.key for k in keys if k.scope == "session"))


def sessions_of(people: Iterable[SessionPeople], keys: Iterable[ScopeKey]) -> list[SessionPeople]:
    """The people of the sessions of these scope keys: an import judges only the sessions it
    writes memory of."""
    sessions = {k.session_id for k in keys if k.scope == "session"}
    return [p for p in people if p[0] in sessions]


def session_memory_gone(
    key: ScopeKey, gone: Collection[tuple[str, str]], erased_scopes: Collection[str]
) -> bool:
    """Session memory forget_user deleted. Its session tombstone says so (rules.erasure: of
    ``erased_scopes``), with or without the session's messages in the file; a forget of before
    tombstones were written is found through the people of the session (``gone``, its (session,
    agent) pairs): of a session it deleted whole, or this agent's of one its users were all
    forgotten for (who took part comes from the file too, ``SessionPeople``: a session deleted
    whole cannot tell). The import's rule, and its dry run's
    (MemoryStore.forgotten_session_memory)."""
    if key.scope != "session":
        return False
    return key.key in erased_scopes or (key.session_id or "", key.agent_id) in gone


def _gone(key: ScopeKey, snapshot: BlobImportSnapshot | ReflectionImportSnapshot) -> bool:
    return session_memory_gone(key, snapshot.gone, snapshot.erased_scopes)


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
        if erased(snapshot.epochs, key.agent_id, key.user_id) or _gone(key, snapshot):
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
    gone: frozenset[tuple[str, str]] = frozenset()  # (session, agent): memory forget deleted
    # Of the request's session keys, those with a session tombstone (rules.erasure).
    erased_scopes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ReflectionImportRequest(Request[ReflectionImportSnapshot]):
    reflection_ids: tuple[str, ...]
    keys: tuple[str, ...]
    pairs: tuple[Pair, ...]
    sessions: tuple[SessionPeople, ...] = ()
    session_keys: tuple[str, ...] = ()  # the session-scope ones among keys (as for blobs)
    # The tombstones the file carries (rules.import_erasures.unknown): those it knows of refuse
    # none of its records.
    known: Known = ()

    def serialized_on(self) -> tuple[str, ...]:
        return epoch_keys(self.pairs, self.sessions)


def plan_import_reflections(
    reflections: Sequence[Reflection], snapshot: ReflectionImportSnapshot
) -> Plan[ImportCounts]:
    counts = ImportCounts()
    new: dict[str, Reflection] = {}
    for r in reflections:
        key = r.scope_key
        if r.reflection_id in snapshot.existing or r.reflection_id in new:
            counts.existing += 1
        elif erased(snapshot.epochs, key.agent_id, key.user_id) or _gone(key, snapshot):
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
