"""The SQL export of a user reads only what its answer needs: a session's agents only where they
judge one agent's messages (a message without its recorder), its message users from the
messages when it read them, neither where nothing depends on them. Statements counted on SQLite
by the table each one reads (its first FROM), through a connection of the store's file."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from pathlib import Path

from memory.models import ScopeKey, StoredMessage
from memory.store.counts import ExportData
from memory.store.export_reads import read_export
from memory.store.sql.lifecycle_reads import SqlExport
from memory.store.sqlite import SQLiteStore
from memory.store.sqlite.db import SQLiteDb
from tests.store.builders import at, msg, record, reflection

_READ = re.compile(r"\s*SELECT\b.*?\bFROM\s+(\w+)", re.DOTALL | re.IGNORECASE)


async def _store(tmp_path: Path) -> SQLiteStore:
    """g (a1): u1 and u2. s2 (a1): u1 alone, with session memory. s6 (a2): u1 alone."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await record(store, "g", "a1", [
        msg("g-1", "u1: hello", user_id="u1", seconds=1),
        msg("g-2", "u2: hi", user_id="u2", seconds=2),
        msg("g-3", "hello both", role="agent", user_id=None, seconds=3),
    ])  # fmt: skip
    await record(store, "s2", "a1", [
        msg("s2-1", "u1 alone", user_id="u1", seconds=1),
        msg("s2-2", "noted", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "s6", "a2", [msg("s6-1", "u1 to a2", user_id="u1", seconds=1)])
    await store.import_reflections([reflection(ScopeKey.session("a1", "s2"), 0, session_id="s2")])
    return store


async def _reads(
    store: SQLiteStore, *, agent_id: str | None, user_id: str, messages: bool
) -> tuple[Counter[str], ExportData]:
    """The tables the SQL export reads, one count a statement, and its answer, which is the
    store's own."""
    statements: list[str] = []
    conn = sqlite3.connect(store._reader._path)
    conn.row_factory = sqlite3.Row
    conn.set_trace_callback(statements.append)
    try:
        reads = SqlExport(SQLiteDb(conn), agent_id, user_id)
        data = await read_export(reads, messages=messages, facts=True)
    finally:
        conn.close()
    assert data == await store.export_data(agent_id=agent_id, user_id=user_id, messages=messages)
    tables = Counter(m.group(1) for s in statements if (m := _READ.match(s)))
    return tables, data


async def test_a_users_export_reads_each_table_once_and_session_agents_only_when_needed(
    tmp_path: Path,
) -> None:
    store = await _store(tmp_path)
    try:
        # Every agent: no message is judged by its recorder.
        tables, data = await _reads(store, agent_id=None, user_id="u1", messages=True)
        assert [m.message_id for m in data.messages] == ["g-1", "s2-1", "s2-2", "s6-1"]
        assert tables["messages"] == 1, "the message users come from the messages read"
        assert tables["session_agents"] == 0

        # One agent, no messages: the message users still decide s2's session memory.
        tables, data = await _reads(store, agent_id="a1", user_id="u1", messages=False)
        assert [r.scope_key.session_id for r in data.reflections] == ["s2"]
        assert (tables["messages"], tables["session_agents"]) == (1, 0)

        # One agent's messages, each with its recorder: only what is withheld from a1.
        tables, data = await _reads(store, agent_id="a1", user_id="u1", messages=True)
        assert [m.message_id for m in data.messages] == ["g-1", "s2-1", "s2-2"]
        assert (tables["messages"], tables["session_agents"]) == (1, 1)

        # A user with neither messages nor session memory exported: nothing of their sessions.
        tables, data = await _reads(store, agent_id="a2", user_id="u1", messages=False)
        assert data.reflections == [] and data.messages == []
        assert (tables["messages"], tables["session_agents"], tables["session_users"]) == (0, 0, 0)
    finally:
        await store.close()


async def test_a_message_without_its_recorder_reads_the_sessions_agents(tmp_path: Path) -> None:
    store = await _store(tmp_path)
    try:
        old = StoredMessage(
            session_id="g", seq=4, message_id="g-4", role="user", content="old words",
            created_at=at(4), user_id="u1",
        )  # fmt: skip
        stored = await store.load_messages("g", 0, 100)
        assert (await store.import_messages([*stored, old])).inserted == 1

        tables, data = await _reads(store, agent_id="a1", user_id="u1", messages=True)

        # g's only agent is a1: the message is a1's record.
        assert [m.message_id for m in data.messages] == ["g-1", "g-4", "s2-1", "s2-2"]
        assert (tables["messages"], tables["session_agents"]) == (1, 2)
    finally:
        await store.close()
