"""What a dry run says of the store it would import into: the records the import would find
already there, or refuse as a forgotten user's, moved from a batch to its drops, with the words
the import's counts use. Only reads the store: the import itself judges again in its writes.

The same rules as the import (rules.imports.erased, rules.import_sessions), read outside its
transactions: session memory a forget deleted (with its session, or one agent's of a session
that stays) is refused as the import refuses it, by its session tombstones and the people of
its session (MemoryStore.forgotten_session_memory: rules.imports.session_memory_gone); a
message whose seq another message holds (a conflict) counts as new.

A source judged in several batches (an export file read a batch at a time) is judged as one:
the ids a write would have given the facts and reflections of earlier batches are held for the
later ones (``Judge``), as the store holds them once written, and the plans of the batches add up
(``combined``) to the plan of the whole."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Sequence

from memory.lifecycle.people import session_people
from memory.lifecycle.placement import Placed
from memory.lifecycle.plan import ImportPlan, PlanLine
from memory.lifecycle.records import (
    ConsolidatedImport,
    Dropped,
    FactImport,
    ImportBatch,
    MessageImport,
    ReflectionImport,
    SourceRef,
)
from memory.lifecycle.writer import (
    not_forgotten,
    place_facts,
    place_reflections,
    shard_reflections,
)
from memory.models import ScopeKey
from memory.store.base import MemoryStore
from memory.store.counts import SessionPeople
from memory.store.rules.erased_messages import (
    erased_message,
    gone_with_users,
    lone_user,
    whose,
)
from memory.store.rules.erasure import ALL_AGENTS
from memory.store.rules.import_erasures import Known, known_of
from memory.store.rules.imports import Pair, erased, users_by_agent

THERE = "already there"
FORGOTTEN = "forgotten user"
CONFLICT = "conflict: the store's own is kept"

_CHUNK = 500


def _drop(source: SourceRef, agent_id: str | None, user_id: str | None, reason: str) -> Dropped:
    return Dropped(source=source, agent_id=agent_id, user_id=user_id, reason=reason)


async def _epochs(store: MemoryStore, pairs: Iterable[Pair], known: Known) -> dict[Pair, int]:
    """The effective erasure epoch of each (agent, user) pair, as the import reads them (of the
    forgets the file does not know of: ``known``, its tombstones)."""
    epochs: dict[Pair, int] = {}
    for agent_id, users in users_by_agent(dict.fromkeys(pairs)).items():
        stored = await store.erasure_epochs(agent_id, users, known=known)
        epochs |= {(agent_id, user): epoch for user, epoch in stored.items()}
    return epochs


def _hold[R: (FactImport, ReflectionImport)](held: dict[str, Hashable], placed: Placed[R]) -> None:
    """The ids given to these records (each one's first is the one it is placed under), held
    for the later chunks and batches: the result does not depend on where they are cut."""
    for r in placed.new:
        held[r.ids[0]] = r.owner


async def _facts(
    store: MemoryStore, facts: Sequence[FactImport], held: dict[str, Hashable], known: Known
) -> tuple[list[FactImport], list[Dropped]]:
    kept: list[FactImport] = []
    dropped: list[Dropped] = []
    for i in range(0, len(facts), _CHUNK):
        placed = await place_facts(store, facts[i : i + _CHUNK], held)
        _hold(held, placed)
        allowed = {f.fact_id for f in await not_forgotten(store, placed.new, known)}
        kept += [f for f in placed.new if f.fact_id in allowed]
        refused = [(f, FORGOTTEN) for f in placed.new if f.fact_id not in allowed]
        for f, reason in [*refused, *_there_or_taken(placed)]:
            dropped.append(_drop(f.source, f.agent_id, f.user_id, reason))
    return kept, dropped


def _there_or_taken[R: (FactImport, ReflectionImport)](placed: Placed[R]) -> list[tuple[R, str]]:
    return [(r, THERE) for r in placed.there] + [(r, CONFLICT) for r in placed.taken]


async def _reflections(
    store: MemoryStore,
    reflections: Sequence[ReflectionImport],
    held: dict[str, Hashable],
    known: Known,
    people: Sequence[SessionPeople],
) -> tuple[list[ReflectionImport], list[Dropped]]:
    placed = await place_reflections(store, reflections, held)
    _hold(held, placed)
    forgotten = await _Forgotten.read(store, [r.scope_key for r in placed.new], known, people)
    dropped: list[Dropped] = []
    refused = [(r, FORGOTTEN) for r in placed.new if forgotten(r.scope_key)]
    kept = [r for r in placed.new if not forgotten(r.scope_key)]
    for r, reason in [*refused, *_there_or_taken(placed)]:
        dropped.append(_drop(r.source, r.scope_key.agent_id, r.scope_key.user_id, reason))
    return kept, dropped


class _Forgotten:
    """Whether the import refuses a scope's memory as forgotten: a forgotten user's
    (rules.imports.erased), or session memory a forget deleted (forgotten_session_memory)."""

    def __init__(self, epochs: dict[Pair, int], sessions: frozenset[str]) -> None:
        self._epochs = epochs
        self._sessions = sessions

    @classmethod
    async def read(
        cls,
        store: MemoryStore,
        keys: Sequence[ScopeKey],
        known: Known,
        people: Sequence[SessionPeople],
    ) -> _Forgotten:
        epochs = await _epochs(store, ((k.agent_id, k.user_id) for k in keys if k.user_id), known)
        sessions = await store.forgotten_session_memory(keys, sessions=people, known=known)
        return cls(epochs, sessions)

    def __call__(self, key: ScopeKey) -> bool:
        return erased(self._epochs, key.agent_id, key.user_id) or key.key in self._sessions


async def _blob_reason(store: MemoryStore, blob: ConsolidatedImport) -> str | None:
    """As the writer judges a blob: a scope without one takes it; an agent's shards merged by an
    earlier run are there; else the store's own wins."""
    stored = await store.get_consolidated(blob.scope_key)
    if stored is None:
        return None
    if blob.needs_merge:
        shard = shard_reflections(blob)[0].reflection_id
        return THERE if await store.get_reflection(shard) is not None else CONFLICT
    return THERE if (stored.content, stored.version) == (blob.content, blob.version) else CONFLICT


async def _blobs(
    store: MemoryStore,
    blobs: Sequence[ConsolidatedImport],
    known: Known,
    people: Sequence[SessionPeople],
) -> tuple[list[ConsolidatedImport], list[Dropped]]:
    forgotten = await _Forgotten.read(store, [b.scope_key for b in blobs], known, people)
    kept: list[ConsolidatedImport] = []
    dropped: list[Dropped] = []
    for b in blobs:
        key = b.scope_key
        reason = FORGOTTEN if forgotten(key) else None
        reason = reason or await _blob_reason(store, b)
        if reason is None:
            kept.append(b)
        else:
            source = b.sources[0] if b.sources else SourceRef(
                system="import", collection="consolidated", source_id=key.key
            )  # fmt: skip
            dropped.append(_drop(source, key.agent_id, key.user_id, reason))
    return kept, dropped


async def _session_messages(
    store: MemoryStore, session_id: str, messages: Sequence[MessageImport], known: Known
) -> tuple[list[MessageImport], list[Dropped]]:
    """One session's, as rules.import_sessions judges them: stored ids are there; a session a
    forget took whole, or a forgotten user's message, is refused."""
    session = await store.get_session(session_id)
    file_agents = [m.message.agent_id for m in messages if m.message.agent_id]
    agents = tuple(dict.fromkeys((*(session.agent_ids if session else ()), *file_agents)))
    file_users = [m.message.user_id for m in messages if m.message.user_id]
    stored_users = (*session.user_ids, *session.session_user_ids) if session else ()
    users = tuple(dict.fromkeys((*stored_users, *file_users)))
    pairs = ((a, u) for a in agents or (ALL_AGENTS,) for u in users)
    epochs = await _epochs(store, pairs, known)
    gone = gone_with_users(epochs, agents, users)
    stored = {
        m.message_id
        for m in await store.get_messages(session_id, [m.message.message_id for m in messages])
    }
    alone = lone_user(
        users, session is not None and session.has_guests, (m.message for m in messages)
    )
    kept: list[MessageImport] = []
    dropped: list[Dropped] = []
    for m in messages:
        msg = m.message
        speaker = whose(msg, alone)
        user_erased = speaker is not None and erased_message(epochs, agents, msg, speaker)
        reason = THERE if msg.message_id in stored else None
        reason = reason or (FORGOTTEN if gone or user_erased else None)
        if reason is None:
            kept.append(m)
        else:
            dropped.append(_drop(m.source, msg.agent_id, msg.user_id, reason))
    return kept, dropped


async def _messages(
    store: MemoryStore, messages: Sequence[MessageImport], known: Known
) -> tuple[list[MessageImport], list[Dropped]]:
    sessions: dict[str, list[MessageImport]] = {}
    for m in messages:
        sessions.setdefault(m.message.session_id, []).append(m)
    kept: list[MessageImport] = []
    dropped: list[Dropped] = []
    for session_id, theirs in sessions.items():
        k, d = await _session_messages(store, session_id, theirs, known)
        kept += k
        dropped += d
    return kept, dropped


class Judge:
    """against_store of the batches of one import, in the order it writes them: a record of a
    later batch whose id an earlier one takes is found there, as the import finds it stored.
    A session's messages are to be in one batch (as the writer takes them: _session_messages).
    ``known`` and ``people``: the source's tombstones and the people of its sessions, as
    writer.write_batches takes them (None: each batch's own)."""

    def __init__(
        self,
        store: MemoryStore,
        known: Known | None = None,
        people: Sequence[SessionPeople] | None = None,
    ) -> None:
        self._store = store
        self._known = known
        self._people = people
        self._facts: dict[str, Hashable] = {}  # id -> owner, of the records judged new so far
        self._reflections: dict[str, Hashable] = {}

    async def __call__(self, batch: ImportBatch) -> ImportBatch:
        """The batch as the import would write it into this store: what is there, and what is
        of a user forgotten there, among the drops (agents are not counted by the dry run)."""
        store = self._store
        known = self._known
        if known is None:
            known = known_of(e.stored() for e in batch.erasures)
        people = session_people(batch) if self._people is None else self._people
        facts, f_drops = await _facts(store, batch.facts, self._facts, known)
        reflections, r_drops = await _reflections(
            store, batch.reflections, self._reflections, known, people
        )
        blobs, b_drops = await _blobs(store, batch.consolidated, known, people)
        messages, m_drops = await _messages(store, batch.messages, known)
        return batch.model_copy(
            update={
                "facts": tuple(facts),
                "reflections": tuple(reflections),
                "consolidated": tuple(blobs),
                "messages": tuple(messages),
                "dropped": (*batch.dropped, *f_drops, *r_drops, *b_drops, *m_drops),
            }
        )


async def against_store(store: MemoryStore, batch: ImportBatch) -> ImportBatch:
    """One batch as the import would write it into this store (Judge, for a single batch)."""
    return await Judge(store)(batch)


_KEY = ("agent_id", "user_id", "dropped")  # a plan line's fields that are not its counts


def combined(plans: Iterable[ImportPlan]) -> ImportPlan:
    """The plans of a source's batches as one: the plan of all their records (plan.plan), its
    lines in plan's order, without holding the records of more than one batch."""
    counts: dict[tuple[str | None, str | None], Counter[str]] = defaultdict(Counter)
    drops: dict[tuple[str | None, str | None], Counter[str]] = defaultdict(Counter)
    models: Counter[str] = Counter()
    for p in plans:
        for ln in p.lines:
            counts[ln.agent_id, ln.user_id].update(ln.model_dump(exclude=set(_KEY)))
            drops[ln.agent_id, ln.user_id].update(ln.dropped)
        models.update(p.facts_with_source_vectors)
    keys = sorted(counts, key=lambda k: (k[0] or "", k[1] or ""))  # as plan.plan sorts them
    return ImportPlan(
        lines=tuple(
            PlanLine(agent_id=a, user_id=u, **counts[a, u], dropped=dict(drops[a, u]))
            for a, u in keys
        ),
        facts_with_source_vectors=dict(models),
    )
