"""A store's memories as ``mnemos export`` records (memory.lifecycle.export's format), written
to a file (export_store) or streamed in chunks (export_chunks, the HTTP export), from one read
of the store (read_for_export): the text is made a line at a time, never the whole file in
memory. The read itself is held whole (MemoryStore.export_data reads one snapshot at once)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Collection, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, TextIO

from memory.lifecycle.export import (
    AgentLine,
    ConsolidatedLine,
    FactLine,
    HeaderLine,
    MessageLine,
    Record,
    ReflectionLine,
    export_lines,
    write_export,
)
from memory.models import StoredMessage
from memory.store.base import MemoryStore
from memory.store.counts import ExportData
from memory.store.rules.withheld import Withheld, withheld_from


def records_of(
    data: ExportData,
    sessions_created: Mapping[str, datetime] | None = None,
    sessions_withheld: Mapping[str, Mapping[str, Withheld]] | None = None,
    sessions_cursors: Mapping[str, Mapping[str, int]] | None = None,
) -> Iterator[Record]:
    """The records of ``data``, which they consume: its lists are emptied as their records
    are made (_drained). ``sessions_created``: each message's session's created_at (absent:
    none written); ``sessions_withheld``: each session's agents' withheld maps (absent:
    nothing withheld); ``sessions_cursors``: each session's agents' cursors (absent: every
    message formed)."""
    created = sessions_created or {}
    withheld = sessions_withheld or {}
    cursors = sessions_cursors or {}
    for agent in _drained(data.agents):
        yield AgentLine(**agent.model_dump())
    for fact, vector in _drained(data.facts):
        yield FactLine(**fact.model_dump(), embedding=vector)
    for r in _drained(data.reflections):
        yield ReflectionLine(**r.model_dump())
    for b in _drained(data.consolidated):
        yield ConsolidatedLine(**b.model_dump())
    for m in _drained(data.messages):
        yield MessageLine(
            **m.model_dump(),
            session_created_at=created.get(m.session_id),
            withheld_from=withheld_from(m, withheld.get(m.session_id, {})),
            pending_for=pending_for(m, cursors.get(m.session_id, {})),
        )


def _drained[T](items: list[T]) -> Iterator[T]:
    """The items in order, each dropped from ``items`` as it is taken: the read is freed as the
    file is written, not all at once after its last line (freeing 100,000 facts with their
    vectors at once held the event loop for half a second), and memory falls meanwhile."""
    items.reverse()  # popped from the end: each take is O(1)
    while items:
        yield items.pop()


def pending_for(message: StoredMessage, cursors: Mapping[str, int]) -> tuple[str, ...]:
    """The agents (of ``cursors``: each one's cursor) that have not formed the message yet: an
    import of the file leaves it to form for them (rules.import_sessions.file_cursors)."""
    return tuple(sorted(a for a, cursor in cursors.items() if message.seq > cursor))


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


async def sessions_withheld(
    store: MemoryStore, data: ExportData, agents: Collection[str] | None = None
) -> dict[str, dict[str, Withheld]]:
    """Each session's agents' withheld maps (rules.withheld), those not empty: a message line
    names the agents its message is withheld from, so that an import withholds it again. Every
    agent's (``agents`` None), with ``--agent`` too: a session imported from one file per agent
    keeps the others' marks. Read after the export's snapshot, as sessions_created: a bound only
    grows, so a forget since then withholds more, never less; a session deleted since then
    (every user forgotten) has none left to read, and the file is older than that forget
    anyway."""
    withheld: dict[str, dict[str, Withheld]] = {}
    for session_id, agent_id in await _session_agents(store, data, agents):
        state = await store.get_session_agent_state(session_id, agent_id)
        if state is not None and state.withheld:
            withheld.setdefault(session_id, {})[agent_id] = state.withheld
    return withheld


async def sessions_cursors(
    store: MemoryStore, data: ExportData, agents: Collection[str] | None = None
) -> dict[str, dict[str, int]]:
    """Each session's agents' cursors (the last seq each has formed), of every agent (``agents``
    None) with ``--agent`` too, as sessions_withheld: a message line names the agents it is
    still to be formed for. Read after the export's snapshot, as the others: a formation
    committing between the two reads makes its messages count as formed while its facts are not
    in the file. A store is moved with its workers stopped (what they record or form after the
    snapshot is not in the file either). A session gone since then has no cursor left: its
    messages count as formed, as in files written before this."""
    cursors: dict[str, dict[str, int]] = {}
    for session_id, agent_id in await _session_agents(store, data, agents):
        state = await store.get_session_agent_state(session_id, agent_id)
        if state is not None:
            cursors.setdefault(session_id, {})[agent_id] = state.cursor_seq
    return cursors


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
    """An export read from the store (its one snapshot, and the session states read after it),
    not written yet: the header and the records, made one at a time as the file is written."""

    header: HeaderLine
    records: Iterator[Record]


async def read_for_export(
    store: MemoryStore,
    *,
    agent_id: str | None,
    user_id: str | None,
    messages: bool,
    now: datetime,
    states_of: Collection[str] | None = None,
) -> ReadExport:
    """Every store read of an export, before its first line: a store that fails fails here,
    answered as any failed request, not as a file cut midway. ``states_of``: the agents whose
    formation state of a session (``pending_for``, ``withheld_from``) message lines may name;
    None, every agent's (an operator's export: a store moved by export and import keeps each
    one's). An export for an API key names only its agent's: a session holding another agent is
    unknown to the key (serve.auth.foreign_session), and the file must not tell that the agent
    holds it."""
    data = await store.export_data(agent_id=agent_id, user_id=user_id, messages=messages)
    meta = await store.embedding_meta()
    header = HeaderLine(
        exported_at=now,
        embedding_model=None if meta is None else meta[0],
        agent_id=agent_id,
        user_id=user_id,
        messages=messages,
    )
    created = await sessions_created(store, data)
    withheld = await sessions_withheld(store, data, states_of)
    cursors = await sessions_cursors(store, data, states_of)
    return ReadExport(header, records_of(data, created, withheld, cursors))


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
    return write_export(out, read.header, read.records)


# About what a chunk of a streamed export holds: big enough that sending it costs little beside
# serialising it, small enough that serialising it keeps the event loop for about a millisecond.
CHUNK_CHARS: Final = 64 * 1024


async def export_chunks(read: ReadExport, size: int = CHUNK_CHARS) -> AsyncIterator[str]:
    """The file of ``read`` in chunks of whole lines, ``size`` characters or so (one line may be
    longer), for an HTTP answer: it holds a chunk, not the file, and it yields to the event loop
    before each chunk, so that serialising a big export leaves the server's other requests
    their turns. Its last chunk ends with the end line: a stream cut by a failure midway lacks
    it, and read_export refuses what the client saved as truncated."""
    lines = export_lines(read.header, read.records)
    while True:
        await asyncio.sleep(0)
        chunk = list(_take(lines, size))
        if not chunk:
            return
        yield "".join(chunk)


def _take(lines: Iterator[str], size: int) -> Iterator[str]:
    """The next lines of ``lines``, as many as reach ``size`` characters (at least one)."""
    taken = 0
    for text in lines:
        yield text
        taken += len(text)
        if taken >= size:
            return
