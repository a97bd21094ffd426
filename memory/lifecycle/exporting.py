"""A store's memories as ``mnemos export`` records (memory.lifecycle.export's format), written
to a file (export_store) or streamed in chunks (export_chunks, the HTTP export), from the reads
of read_for_export: the text is made a line at a time, never the whole file in memory. The facts
(with their vectors, the bulk of an export) are read a page at a time as the file is written
(MemoryStore.export_facts, by the ids read before the first line), the rest in one read before
the first line."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, TextIO

from memory import switch_marks
from memory.lifecycle.export import (
    AgentLine,
    ConsolidatedLine,
    ErasureLine,
    FactLine,
    HeaderLine,
    MessageLine,
    Record,
    ReflectionLine,
    export_text,
)
from memory.models import SessionAgentState, StoredMessage
from memory.store.base import MemoryStore
from memory.store.counts import ExportData
from memory.store.rules.export import EXPORT_PAGE, Exported
from memory.store.rules.withheld import Withheld, withheld_from


async def records_of(
    data: ExportData,
    facts: AsyncIterator[Exported] | None = None,
    sessions_created: Mapping[str, datetime] | None = None,
    sessions_withheld: Mapping[str, Mapping[str, Withheld]] | None = None,
    sessions_states: Mapping[str, Mapping[str, SessionAgentState]] | None = None,
) -> AsyncIterator[Record]:
    """The records of ``data``, which they consume: its lists are emptied as their records
    are made (_drained). ``facts``: the facts as they are read (fact_pages), after the agents;
    absent, those of ``data``. ``sessions_created``: each message's session's created_at
    (absent: none written); ``sessions_withheld``: each session's agents' withheld maps
    (absent: nothing withheld); ``sessions_states``: each session's agents' states, for what
    each has formed and the switches it recorded the rest under (absent: every message formed)."""
    created = sessions_created or {}
    withheld = sessions_withheld or {}
    states = sessions_states or {}
    for agent in _drained(data.agents):
        yield AgentLine(**agent.model_dump())
    async for fact, vector in _listed(data.facts) if facts is None else facts:
        yield FactLine(**fact.model_dump(), embedding=vector)
    for r in _drained(data.reflections):
        yield ReflectionLine(**r.model_dump())
    for b in _drained(data.consolidated):
        yield ConsolidatedLine(**b.model_dump())
    for m in _drained(data.messages):
        mine = states.get(m.session_id, {})
        pending = pending_for(m, mine)
        yield MessageLine(
            **m.model_dump(),
            session_created_at=created.get(m.session_id),
            withheld_from=withheld_from(m, withheld.get(m.session_id, {})),
            pending_for=pending,
            recorded_under=recorded_under(m, mine),
        )
    for e in _drained(data.erasures):
        yield ErasureLine(**e.model_dump())


async def _listed[T](items: list[T]) -> AsyncIterator[T]:
    for item in _drained(items):
        yield item


async def fact_pages(
    store: MemoryStore, fact_ids: Sequence[str], first: list[Exported]
) -> AsyncIterator[Exported]:
    """The export's facts: ``first``, the page of the first ids (read already), then a page of
    ``fact_ids`` at a time (EXPORT_PAGE), each read once the one before is taken: the store holds
    no read open meanwhile (its other reads get their turns), and memory holds a page of facts
    with their vectors, not all of them."""
    for fact in _drained(first):
        yield fact
    for start in range(EXPORT_PAGE, len(fact_ids), EXPORT_PAGE):
        for fact in _drained(await store.export_facts(fact_ids[start : start + EXPORT_PAGE])):
            yield fact


def _drained[T](items: list[T]) -> Iterator[T]:
    """The items in order, each dropped from ``items`` as it is taken: the read is freed as the
    file is written, not all at once after its last line (freeing 100,000 facts with their
    vectors at once held the event loop for half a second), and memory falls meanwhile."""
    items.reverse()  # popped from the end: each take is O(1)
    while items:
        yield items.pop()


def pending_for(message: StoredMessage, states: Mapping[str, SessionAgentState]) -> tuple[str, ...]:
    """The agents (of ``states``: each one's state) that have not formed the message yet: an
    import of the file leaves it to form for them (rules.import_sessions.file_cursors)."""
    return tuple(sorted(a for a, state in states.items() if message.seq > state.cursor_seq))


def recorded_under(
    message: StoredMessage, states: Mapping[str, SessionAgentState]
) -> dict[str, tuple[bool, bool]]:
    """The memory switches each agent (of ``states``) recorded it under, where known
    (memory/switch_marks.py): an import of the file marks them, so it forms under them in the
    store it lands in too. Formed messages too: a copy that has not formed them yet (it got an
    older file) forms them under these, not under the switches of a later stretch."""
    known = {a: switch_marks.recorded_at(state, message.seq) for a, state in states.items()}
    return {a: switches for a, switches in known.items() if switches is not None}


async def sessions_created(store: MemoryStore, data: ExportData) -> dict[str, datetime]:
    """When each session of the exported messages was created: an import creates it at that
    time, so that formation ids (they name the session's incarnation by it) still name it. Read
    after the export's snapshot: a session gone since then is left out (its messages then import
    as files written before this did)."""
    created = {}
    for session_id in dict.fromkeys(m.session_id for m in data.messages):
        if (session := await store.get_session(session_id)) is not None:
            created[session_id] = session.created_at
    return created


async def session_states(
    store: MemoryStore, data: ExportData, agents: Collection[str] | None = None
) -> tuple[dict[str, dict[str, Withheld]], dict[str, dict[str, SessionAgentState]]]:
    """Each session's agents' withheld maps (rules.withheld), those not empty, and states (the
    last seq each has formed, the switches it recorded the rest under), each state read once: a
    message line names the agents its message is withheld from, so that an import withholds it
    again, and those it is still to be formed for, with the switches each recorded it under.
    Every agent's (``agents`` None), with ``--agent`` too: a session imported from one file
    per agent keeps the others' marks. Read after the export's snapshot, as sessions_created: a
    bound only grows, so a forget since then withholds more, never less; a formation committing
    between the two reads makes its messages count as formed while its facts are not in the file
    (a store is moved with its workers stopped: what they record or form after the snapshot is
    not in the file either). A session gone since then (every user forgotten) has no state left:
    its messages count as formed, as in files written before this."""
    withheld: dict[str, dict[str, Withheld]] = {}
    states: dict[str, dict[str, SessionAgentState]] = {}
    for session_id, agent_id in await _session_agents(store, data, agents):
        state = await store.get_session_agent_state(session_id, agent_id)
        if state is None:
            continue
        states.setdefault(session_id, {})[agent_id] = state
        if state.withheld:
            withheld.setdefault(session_id, {})[agent_id] = state.withheld
    return withheld, states


async def _session_agents(
    store: MemoryStore, data: ExportData, agents: Collection[str] | None
) -> list[tuple[str, str]]:
    """(session, agent) of the exported messages' sessions still stored, the agents among
    ``agents`` (None: every one)."""
    pairs: list[tuple[str, str]] = []
    for session_id in dict.fromkeys(m.session_id for m in data.messages):
        if (session := await store.get_session(session_id)) is not None:
            pairs += [(session_id, a) for a in session.agent_ids if agents is None or a in agents]
    return pairs


@dataclass(frozen=True)
class ReadExport:
    """An export read from the store (its one read, the session states read after it, the ids
    of its facts and the first page of them), not written yet: the header and the records, made
    one at a time as the file is written, the facts' later pages read meanwhile."""

    header: HeaderLine
    records: AsyncIterator[Record]


async def read_for_export(
    store: MemoryStore,
    *,
    agent_id: str | None,
    user_id: str | None,
    messages: bool,
    now: datetime,
    states_of: Collection[str] | None = None,
) -> ReadExport:
    """The store reads of an export before its first line: a store that fails fails here,
    answered as any failed request, not as a file cut midway; one failing on a later page of
    facts cuts the file before its end line (export_text). ``states_of``: the agents whose
    formation state of a session (``pending_for``, ``recorded_under``, ``withheld_from``)
    message lines may name; None, every agent's (an operator's export: a store moved by export
    and import keeps each one's). An export for an API key names only its agent's: a session
    holding another agent is unknown to the key (serve.auth.foreign_session), and the file must
    not tell that the agent holds it."""
    data = await store.export_data(
        agent_id=agent_id, user_id=user_id, messages=messages, facts=False
    )
    # The ids in one read, the facts then by id a page at a time: no index orders one user's
    # facts by insertion, so a page read after a key sorted all of them for each page (100,000
    # facts on SQLite: twice the time). A fact formed after this read is not in the file, none
    # is in it twice, and one changed before its page is read is in its newer version.
    fact_ids = await store.export_fact_ids(agent_id=agent_id, user_id=user_id)
    first = await store.export_facts(fact_ids[:EXPORT_PAGE])
    meta = await store.embedding_meta()
    header = HeaderLine(
        exported_at=now,
        embedding_model=None if meta is None else meta[0],
        agent_id=agent_id,
        user_id=user_id,
        messages=messages,
    )
    created = await sessions_created(store, data)
    withheld, states = await session_states(store, data, states_of)
    facts = fact_pages(store, fact_ids, first)
    return ReadExport(header, records_of(data, facts, created, withheld, states))


async def export_store(
    store: MemoryStore,
    out: TextIO,
    *,
    agent_id: str | None,
    user_id: str | None,
    messages: bool,
    now: datetime,
    states_of: Collection[str] | None = None,
) -> dict[str, int]:
    """Write the export (read_for_export) line by line to ``out``; returns the counts per
    record type."""
    read = await read_for_export(
        store, agent_id=agent_id, user_id=user_id, messages=messages, now=now, states_of=states_of
    )
    counts: Counter[str] = Counter()
    async for text in export_text(read.header, read.records, counts):
        out.write(text)
    return dict(counts)


# About what a chunk of a streamed export holds: big enough that sending it costs little beside
# serialising it, small enough that serialising it keeps the event loop for about a millisecond.
CHUNK_CHARS: Final = 64 * 1024


async def export_chunks(read: ReadExport, size: int = CHUNK_CHARS) -> AsyncIterator[str]:
    """The file of ``read`` in chunks of whole lines, ``size`` characters or so (one line may be
    longer), for an HTTP answer: it holds a chunk, not the file, and it yields to the event loop
    before each chunk, so that serialising a big export leaves the server's other requests
    their turns. Its last chunk ends with the end line: a stream cut by a failure midway lacks
    it, and read_export refuses what the client saved as truncated."""
    async for chunk in _chunked(export_text(read.header, read.records), size):
        await asyncio.sleep(0)
        yield chunk
    await asyncio.sleep(0)  # the end of the body too, after the last chunk's turn


async def _chunked(lines: AsyncIterator[str], size: int) -> AsyncIterator[str]:
    """``lines`` joined in chunks of whole lines of ``size`` characters or so (at least one)."""
    chunk: list[str] = []
    taken = 0
    async for text in lines:
        chunk.append(text)
        taken += len(text)
        if taken >= size:
            yield "".join(chunk)
            chunk, taken = [], 0
    if chunk:
        yield "".join(chunk)
