"""Writing import records into a store: agents, blobs (agent shards merged), facts (embedded
with the store's model unless the source's vectors are of that model), reflections, messages,
and last an export's erasure tombstones.

Every store call inserts by id only what is absent, so running an import again writes nothing
twice and an interrupted import resumes: records already written come back as ``existing``
(a fact or reflection only when stored for the same agent and user, or scope: placement.place).
A batch is checked whole before the first write (``checks.check_batch``, the embedder against
the store), so bad input is refused with nothing written. A source written in several batches
(an export file read a batch at a time, import_file) is checked whole before the first of them,
and tells each batch what the others hold that it needs: the people of the file's sessions,
the blobs earlier batches wrote (``write_batch``'s ``people`` and ``blobs_written``).
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Callable,
    Collection,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from datetime import datetime

from memory.deps import Deps
from memory.lifecycle.checks import check_batch
from memory.lifecycle.import_vectors import check_embedder, vectors_for
from memory.lifecycle.people import session_people
from memory.lifecycle.placement import Placed, place
from memory.lifecycle.records import (
    ConsolidatedImport,
    FactImport,
    ImportBatch,
    MessageImport,
    ReflectionImport,
    SourceRef,
)
from memory.lifecycle.stored import consolidated_of, fact_of, reflection_of
from memory.models import SET_ASIDE, AgentConfig, Reflection
from memory.pipeline import consolidation
from memory.pipeline.types import ConsolidationRequest
from memory.store.base import MemoryStore
from memory.store.counts import BlobImport, Erasure, ImportCounts, SessionPeople
from memory.store.rules.import_erasures import Known, known_of
from memory.store.rules.import_sessions import file_cursors, file_switches
from memory.store.rules.imports import Pair, erased, sessions_of, users_by_agent
from memory.store.rules.withheld import file_bounds

CHUNK = 500

Progress = Callable[[str, int], None]  # (what, how many records were just written)


@dataclass
class ImportReport:
    counts: dict[str, ImportCounts] = field(default_factory=dict)
    blobs: dict[str, str] = field(default_factory=dict)  # scope key -> outcome
    merged: list[str] = field(default_factory=list)  # scope keys merged by the consolidation step
    embedded: int = 0  # facts embedded by the store's model (not the source's vectors)

    def add(self, what: str, counts: ImportCounts) -> None:
        self.counts[what] = self.counts.get(what, ImportCounts()) + counts

    def merge(self, other: ImportReport) -> None:
        """Adds a later batch's report. A scope's blob keeps its first outcome: a second blob of
        the scope in one store call is skipped (rules.imports.plan_import_consolidated), and in
        a later batch it would be "existing" or "conflict" against the first."""
        for what, counts in other.counts.items():
            self.add(what, counts)
        for key, outcome in other.blobs.items():
            self.blobs.setdefault(key, outcome)
        self.merged += other.merged
        self.embedded += other.embedded

    def written_blobs(self) -> set[str]:
        """The scope keys whose imported blob is in the store: their reflections stay absorbed."""
        return {k for k, v in self.blobs.items() if v in ("inserted", "existing")}


def _chunks[T](items: Sequence[T]) -> list[Sequence[T]]:
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


Held = Mapping[str, Hashable]  # record id -> owner, as placement.place reads the store


def _held_among(held: Held | None, ids: Sequence[str]) -> dict[str, Hashable]:
    """Of the ids held for earlier records, those among ``ids`` (not all: a file's may be many)."""
    return {} if held is None else {i: held[i] for i in ids if i in held}


async def place_facts(
    store: MemoryStore, facts: Sequence[FactImport], held: Held | None = None
) -> Placed[FactImport]:
    """The facts already there, and the ids the others are written under (placement.place): a
    fact id the store holds for another agent or user is not this fact. ``held``: ids given to
    earlier records that a write would have stored (a dry run, which writes none)."""
    ids = list(dict.fromkeys(i for f in facts for i in f.ids))
    stored = {f.fact_id: (f.agent_id, f.user_id) for f in await store.get_facts(ids)}
    return place(facts, _held_among(held, ids) | stored)


async def place_reflections(
    store: MemoryStore, reflections: Sequence[ReflectionImport], held: Held | None = None
) -> Placed[ReflectionImport]:
    """As place_facts, a reflection's owner being its scope key."""
    ids = list(dict.fromkeys(i for r in reflections for i in r.ids))
    stored: dict[str, Hashable] = {}
    for i in ids:
        if (found := await store.get_reflection(i)) is not None:
            stored[i] = found.scope_key.key
    return place(reflections, _held_among(held, ids) | stored)


async def not_forgotten(
    store: MemoryStore, facts: Sequence[FactImport], known: Known = ()
) -> list[FactImport]:
    """The facts whose user the store has not forgotten for their agent: a forgotten user's
    text is not even sent to the embedder (often another company's API), nor counted by a dry
    run. import_facts judges them all again in its transaction, with the same rule
    (rules.imports.erased). ``known``: the tombstones the file carries, whose forgets refuse
    none of its records (rules.import_erasures.unknown)."""
    pairs = dict.fromkeys((f.agent_id, f.user_id) for f in facts if f.user_id)
    epochs: dict[Pair, int] = {}
    for agent_id, users in users_by_agent(pairs).items():
        stored = await store.erasure_epochs(agent_id, users, known=known)
        epochs |= {(agent_id, user): epoch for user, epoch in stored.items()}
    return [f for f in facts if not erased(epochs, f.agent_id, f.user_id)]


def _by_session(messages: Sequence[MessageImport]) -> list[list[MessageImport]]:
    """Chunks of whole sessions (a session bigger than a chunk is one chunk): the store judges a
    session against all of the file's messages of it (rules.imports.plan_import_session)."""
    sessions: dict[str, list[MessageImport]] = {}
    for m in messages:
        sessions.setdefault(m.message.session_id, []).append(m)
    chunks: list[list[MessageImport]] = []
    for session in sessions.values():
        if chunks and len(chunks[-1]) + len(session) <= CHUNK:
            chunks[-1].extend(session)
        else:
            chunks.append(list(session))
    return chunks


def sessions_created(messages: Sequence[MessageImport]) -> dict[str, datetime]:
    """When each session was created where it comes from (the earliest its messages say), for
    the store to create it at that time if it is new."""
    created: dict[str, datetime] = {}
    for m in messages:
        if (at := m.session_created_at) is not None:
            sid = m.message.session_id
            created[sid] = min(at, created.get(sid, at))
    return created


def shard_reflections(blob: ConsolidatedImport) -> list[Reflection]:
    """An agent's shards as buffered reflections of its scope, for the consolidation step."""
    source = (
        blob.sources[0]
        if blob.sources
        else SourceRef(system="eden", collection="memory_agent", source_id=blob.scope_key.key)
    )
    return [
        Reflection(
            reflection_id=source.derived_id(f"r{i}"),
            scope_key=blob.scope_key,
            content=f"{part.title}: {part.content}" if part.title else part.content,
            source_session_id="imported",
            formed_at=blob.updated_at,
        )
        for i, part in enumerate(blob.parts)
    ]


async def _merge(
    deps: Deps,
    blob: ConsolidatedImport,
    now: datetime,
    people: tuple[SessionPeople, ...],
    known: Known,
) -> BlobImport:
    """Shards → buffered reflections → one consolidation run (the LLM merges them)."""
    shards = shard_reflections(blob)
    sessions = sessions_of(people, [blob.scope_key])
    counts = await deps.store.import_reflections(shards, sessions=sessions, known=known)
    if counts.forgotten == len(shards):
        return "forgotten"
    req = ConsolidationRequest(key=blob.scope_key, force=True)
    d = await consolidation.draft(deps, req)
    if d.content is not None:
        await consolidation.apply(deps, d, now)
    return "inserted"


async def write_batch(
    deps: Deps,
    batch: ImportBatch,
    *,
    now: datetime,
    progress: Progress = lambda what, n: None,
    people: Sequence[SessionPeople] | None = None,
    blobs_written: Collection[str] = (),
    known: Known | None = None,
) -> ImportReport:
    """Writes the batch: agents, messages, blobs, facts, reflections, erasure tombstones, each
    kind in chunks of one store transaction. Bad input (a record recording would refuse, an embedder the store's facts
    do not match) raises before the first write. Afterwards, a failure of the store, of the
    embedder or of the consolidation LLM leaves the chunks written before it in place: run the
    import again, it writes what is missing.

    Messages go before session memory, and each write of session memory judges in its own
    transaction whether forget_user deleted the session whole (``session_people``): a forget
    that lands at any point of the import leaves nothing of the user. Were session memory first,
    a forget between it and the messages would not find the session (not stored yet) and leave
    its memory behind.

    A batch that is one of several of a source: ``people``, session_people of the whole source
    (its session memory and its messages may be in different batches); ``blobs_written``, the
    scope keys whose blob earlier batches wrote (a reflection absorbed into it stays absorbed);
    ``known``, the tombstones of the whole source (import_file.FileIndex.known): a record is
    refused only for a forget the source does not know of (rules.import_erasures), so that
    what a user who came back after it said is imported whichever file brings the tombstone."""
    check_batch(batch, now=now)
    await check_embedder(deps, facts=bool(batch.facts))
    report = ImportReport()
    store = deps.store
    people = session_people(batch) if people is None else tuple(people)
    if known is None:
        known = known_of(_erasures(batch))
    configs = [a.config or AgentConfig(agent_id=a.agent_id, name=a.agent_id) for a in batch.agents]
    configs += [
        AgentConfig(agent_id=a, name=a)
        for a in _undeclared_agents(batch)
        if await store.get_agent(a) is None  # one of an earlier batch's lines, most often
    ]
    report.add("agents", await store.import_agents(configs))
    progress("agents", len(configs))

    for m_chunk in _by_session(batch.messages):
        messages = [m.message for m in m_chunk]
        created = sessions_created(m_chunk)
        marks = file_bounds((m.message, m.withheld_from) for m in m_chunk)
        cursors = file_cursors((m.message, m.pending_for) for m in m_chunk)
        switches = file_switches((m.message, m.recorded_under) for m in m_chunk)
        counts = await store.import_messages(
            messages, sessions_created=created, withheld=marks, cursors=cursors,
            switches=switches, known=known,
        )  # fmt: skip
        report.add("messages", counts)
        progress("messages", len(m_chunk))

    merge_with_llm = deps.llm.name != "heuristic"
    to_merge = [b for b in batch.consolidated if b.needs_merge and merge_with_llm]
    direct = [b for b in batch.consolidated if b not in to_merge]
    sessions = sessions_of(people, [b.scope_key for b in direct])
    outcome = await store.import_consolidated(
        [consolidated_of(b) for b in direct], sessions=sessions, known=known
    )
    report.blobs.update(outcome)
    for blob in to_merge:
        key = blob.scope_key.key
        if await store.get_consolidated(blob.scope_key) is None:
            merged = await _merge(deps, blob, now, people, known)
            report.blobs[key] = merged
            if merged == "inserted":
                report.merged.append(key)
        elif await store.get_reflection(shard_reflections(blob)[0].reflection_id) is not None:
            report.blobs[key] = "existing"  # merged by an earlier run
        else:
            report.blobs[key] = "conflict"  # the live blob wins
    progress("blobs", len(batch.consolidated))

    for all_facts in _chunks(batch.facts):
        # A re-run (or a resumed run) does not embed again what an earlier run wrote.
        placed = await place_facts(store, all_facts)
        report.add("facts", ImportCounts(existing=len(placed.there), conflict=len(placed.taken)))
        absent = placed.new
        chunk = await not_forgotten(store, absent, known)
        report.add("facts", ImportCounts(forgotten=len(absent) - len(chunk)))
        vectors, embedded = await vectors_for(deps, chunk)
        report.embedded += embedded
        facts = [fact_of(f, deps.embedder.model) for f in chunk]
        if facts:
            report.add("facts", await store.import_facts(facts, vectors, known=known))
        progress("facts", len(all_facts))

    written = report.written_blobs() | set(blobs_written)
    for r_chunk in _chunks(batch.reflections):
        placed_r = await place_reflections(store, r_chunk)
        there, taken = len(placed_r.there), len(placed_r.taken)
        report.add("reflections", ImportCounts(existing=there, conflict=taken))
        reflections = [_buffered_unless(r, written) for r in placed_r.new]
        sessions = sessions_of(people, [r.scope_key for r in reflections])
        imported = await store.import_reflections(reflections, sessions=sessions, known=known)
        report.add("reflections", imported)
        progress("reflections", len(r_chunk))

    # The tombstones last (rules.import_erasures): the file's records of a user who came back
    # after a forget are what its store holds of them now, and go in before it binds.
    for e_chunk in _chunks(_erasures(batch)):
        report.add("erasures", await store.import_erasures(e_chunk))
        progress("erasures", len(e_chunk))
    return report


def _erasures(batch: ImportBatch) -> list[Erasure]:
    return [e.stored() for e in batch.erasures]


async def _each(
    batches: AsyncIterable[ImportBatch] | Iterable[ImportBatch],
) -> AsyncIterator[ImportBatch]:
    # Each batch let go of before the next is read (``del``): memory holds one batch, not two.
    if isinstance(batches, AsyncIterable):
        async for batch in batches:
            yield batch
            del batch
    else:
        for batch in batches:
            yield batch
            del batch


async def write_batches(
    deps: Deps,
    batches: AsyncIterable[ImportBatch] | Iterable[ImportBatch],
    *,
    now: Callable[[], datetime],
    progress: Progress = lambda what, n: None,
    begun: Callable[[ImportBatch], None] = lambda batch: None,
    people: Sequence[SessionPeople] | None = None,
    facts: bool = False,
    known: Known | None = None,
) -> ImportReport:
    """The batches of one import written one after the other (write_batch, each at ``now()``),
    their reports added up; ``begun`` is told of each before it is written. A source whose
    batches are parts of one whole (an export file read a batch at a time) gives ``people``,
    session_people of the whole, ``known``, the tombstones of the whole (they come in its last
    batch), and ``facts``, whether any batch holds facts: the embedder is
    checked before the first batch is written (not at the first with facts, after the agents and
    messages of the earlier ones)."""
    await check_embedder(deps, facts=facts)
    total = ImportReport()
    async for batch in _each(batches):
        begun(batch)
        report = await write_batch(
            deps, batch, now=now(), progress=progress, people=people,
            blobs_written=total.written_blobs(), known=known,
        )  # fmt: skip
        total.merge(report)
        del batch  # before the next is read (_each)
    return total


def _buffered_unless(r: ReflectionImport, written: set[str]) -> Reflection:
    """Absorbed only into a blob that was written: else buffered, so nothing is lost (a set-aside
    one stays set aside: it is in no blob)."""
    reflection = reflection_of(r)
    if r.absorbed_into_version not in (None, SET_ASIDE) and r.scope_key.key not in written:
        return reflection.model_copy(update={"absorbed_into_version": None})
    return reflection


def _undeclared_agents(batch: ImportBatch) -> list[str]:
    """The agents the batch's records belong to that it names no agent line for: each is
    registered as a placeholder, as an agent line without a config is (``import_agents`` leaves
    a registered one as it is), so that what is imported under it can be listed, exported and
    forgotten agent by agent ("agent 'zz' is not registered" refused all three)."""
    declared = {a.agent_id for a in batch.agents}
    named = [
        *(f.agent_id for f in batch.facts),
        *(r.scope_key.agent_id for r in batch.reflections),
        *(b.scope_key.agent_id for b in batch.consolidated),
        *(m.message.agent_id for m in batch.messages if m.message.agent_id),
    ]
    return [a for a in dict.fromkeys(named) if a not in declared]
