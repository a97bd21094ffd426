"""A SQLite file of schema 1 (ending and users session-wide) is migrated at setup, idempotently:
each agent of an ended session ended it then, every user of the session is among its
participants, and the store works on (#11)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from unittest.mock import patch

from memory.formation_commit import FactUpdate
from memory.models import ScopeKey
from memory.store.rules.writes import PutFact
from memory.store.sqlite import SQLiteStore
from memory.store.sqlite.codec import to_us
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.schema import ADDED_COLUMNS, SCHEMA_VERSION
from tests.store.builders import (
    USER_KEY,
    Former,
    a_pending_session,
    add,
    assert_guests_marked,
    assert_restatement_stale,
    assert_upgraded_session_marked,
    at,
    imported_long_ago,
    msg,
    record,
    record_unmarked,
    reflection,
    unit,
    user_filter,
    vec,
)

# The session tables as schema 1 wrote them (the rest of the DDL is unchanged since).
SCHEMA_1 = """
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0,
    last_message_at INTEGER, ended_at INTEGER, purged INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_to_purge ON sessions (ended_at, session_id)
    WHERE ended_at IS NOT NULL AND NOT purged;
CREATE TABLE session_users (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    user_id TEXT NOT NULL, UNIQUE (session_id, user_id)
);
CREATE TABLE session_agents (
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL, cursor_seq INTEGER NOT NULL DEFAULT 0,
    pending_messages INTEGER NOT NULL DEFAULT 0, pending_weighted_tokens REAL NOT NULL DEFAULT 0,
    last_message_at INTEGER, formations INTEGER NOT NULL DEFAULT 0, UNIQUE (session_id, agent_id)
);
"""


# The text index as schema 10 and before wrote it: the contents as written (content = 'facts').
SCHEMA_10_FTS = """
CREATE VIRTUAL TABLE facts_fts USING fts5 (
    content, content = 'facts', content_rowid = 'rowid', tokenize = 'porter unicode61'
);
CREATE VIRTUAL TABLE facts_fts_vocab USING fts5vocab (facts_fts, 'row');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF content ON facts BEGIN
    INSERT INTO facts_fts (facts_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
    INSERT INTO facts_fts (rowid, content) VALUES (new.rowid, new.content);
END;
INSERT INTO facts_fts (facts_fts) VALUES ('rebuild');
"""


def _as_schema_10(conn: sqlite3.Connection) -> None:
    """A file of this schema's facts and text index turned into schema 10's."""
    conn.executescript("""
        DROP TRIGGER facts_fts_insert; DROP TRIGGER facts_fts_delete; DROP TRIGGER facts_fts_update;
        DROP TABLE facts_fts_vocab; DROP TABLE facts_fts; DROP VIEW facts_search;
        ALTER TABLE facts DROP COLUMN search_text;
        UPDATE meta SET value = '10' WHERE key = 'schema_version';
    """)  # fmt: skip
    conn.executescript(SCHEMA_10_FTS)


# Schema 13's insertion stamp (rules.recheck) but its column: its trigger and index, which name it.
DROP_INSERTED_AT = "DROP TRIGGER facts_inserted_at; DROP INDEX facts_inserted;"


def _schema_1_file(path: Path) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(SCHEMA_1)
        conn.execute(
            "INSERT INTO sessions (session_id, created_at, last_seq, ended_at) VALUES (?, ?, 2, ?)",
            ("old", to_us(at(0)), to_us(at(50))),
        )
        conn.executemany(
            "INSERT INTO session_users (session_id, user_id) VALUES ('old', ?)", [("u1",), ("u2",)]
        )
        conn.executemany(
            "INSERT INTO session_agents (session_id, agent_id) VALUES ('old', ?)",
            [("a1",), ("a2",)],
        )


async def test_a_schema_1_file_is_migrated_once_and_keeps_working(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema_1_file(path)
    for _ in range(2):  # setup is idempotent
        store = SQLiteStore(path)
        await store.setup()
        await store.close()

    store = SQLiteStore(path)
    try:
        for agent_id in ("a1", "a2"):
            view = await store.get_session("old", agent_id)
            assert view is not None
            assert (view.ended_at, view.user_ids) == (at(50), ("u1", "u2"))
        await store.end_session("old", "a2", at(500))  # a resumed, re-ended session of a2
        assert await store.purge_ended_sessions(at(100), limit=10) == ["old"]  # a1's only
        await record(store, "new", "a1", [msg("m1", user_id="u3")])
        assert (await store.get_session("new", "a1")) is not None
        key = ScopeKey(scope="session", agent_id="a1", session_id="old")
        assert await store.count_unabsorbed(key) == 0
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def test_a_schema_2_file_gains_the_provenance_columns(tmp_path: Path) -> None:
    """Facts and reflections of a file written before provenance read back without it, and
    new ones keep theirs."""
    path = tmp_path / "v2.db"
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store).start()
    await former.form(add("old", "Alice lives in Paris", unit(1, 0)))
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 2 wrote these tables
        conn.execute("DROP INDEX facts_said")  # schema 4's, on a column schema 2 did not have
        _as_schema_10(conn)  # schema 11's text index reads a column schema 2 did not have
        conn.executescript(DROP_INSERTED_AT)  # schema 13's, on a column schema 2 did not have
        for table, column, _ in ADDED_COLUMNS:
            if column != "search_text":
                conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")

    store = SQLiteStore(path)
    try:
        await store.setup()
        former.store = store
        sourced = add("new", "Alice works at Acme", unit(0, 1)).model_copy(
            update={"source_message_ids": ("m2",), "said_at": at(20)}
        )
        await former.form(sourced)
        old, new = await store.get_facts(["old", "new"])
        assert (old.source_message_ids, old.said_at) == ((), None)
        assert (new.source_message_ids, new.said_at) == (("m2",), at(20))
        # The context FIFO's index is back, and the old fact is recent by when it was stored.
        recent = await store.recent_facts(user_filter(), since=at(0), limit=5)
        assert [f.fact_id for f in recent] == ["old", "new"]
    finally:
        await store.close()


async def test_a_schema_6_file_gains_the_guests_of_its_sessions(tmp_path: Path) -> None:
    """Sessions stored before schema 7 holding a guest's message (role user, no user id) have
    guests once the file is opened: beside a user, a group chat from the first start on."""
    path = tmp_path / "v6.db"
    store = SQLiteStore(path)
    await store.setup()
    await record(store, "guests", "a1", [msg("m1", user_id="u1"), msg("m2", user_id=None)])
    await record(store, "alone", "a1", [msg("m1", user_id="u1"), msg("m2", role="agent")])
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 6 wrote the sessions
        conn.execute("ALTER TABLE sessions DROP COLUMN has_guests")

    for _ in range(2):  # setup is idempotent
        store = SQLiteStore(path)
        await store.setup()
        try:
            for agent_id in (None, "a1"):
                guests = await store.get_session("guests", agent_id)
                alone = await store.get_session("alone", agent_id)
                assert guests is not None and guests.has_guests and guests.is_group
                assert alone is not None and not alone.has_guests and not alone.is_group
        finally:
            await store.close()


async def test_a_guest_recorded_by_the_previous_version_is_marked_at_the_next_start(
    tmp_path: Path,
) -> None:
    """A rolling upgrade: after this version's first start, a writer of the previous one
    records a guest beside a user without marking the session. The next start of this version
    marks it (setup does at every start what schema 7 did once)."""
    path = tmp_path / "rolling.db"
    store = SQLiteStore(path)
    await store.setup()
    try:
        await record_unmarked(store, "guests", "a1", [msg("m1"), msg("m2", user_id=None)])
        await record(store, "alone", "a1", [msg("m1"), msg("m2", role="agent")])
        unmarked = await store.get_session("guests", "a1")
        assert unmarked is not None and not unmarked.has_guests  # as the old writer left it
    finally:
        await store.close()

    store = SQLiteStore(path)
    await store.setup()
    try:
        await assert_guests_marked(store)
    finally:
        await store.close()


async def test_a_schema_7_files_agents_withhold_nothing_until_a_forget(tmp_path: Path) -> None:
    """Schema 8 gives each (session, agent) the messages a forget kept for the session's other
    agents (SessionAgentState.withheld): a file written before withholds nothing, and a forget
    under one agent of a session another shares withholds from then on."""
    path = tmp_path / "v7.db"
    store = SQLiteStore(path)
    await store.setup()
    await record(store, "desk", "bob", [msg("m1", user_id="alice")])
    await record(store, "desk", "eve", [msg("m2", user_id="alice", seconds=1)])
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 7 wrote session_agents
        conn.execute("ALTER TABLE session_agents DROP COLUMN withheld")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    try:
        for agent_id in ("bob", "eve"):
            state = await store.get_session_agent_state("desk", agent_id)
            assert state is not None and state.withheld == {}
        [counts] = await store.forget_user("alice", agent_id="eve", at=at(10))
        assert counts.messages == 0  # bob holds both
        eve = await store.get_session_agent_state("desk", "eve")
        # alice was alone in the session: the replies are withheld too ("": rules.withheld.REPLIES)
        assert eve is not None and eve.withheld == {"": 2, "alice": 2}
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def test_a_schema_8_files_messages_read_as_utc_and_new_ones_keep_their_offset(
    tmp_path: Path,
) -> None:
    """Schema 9 keeps the UTC offset each message was sent with (utc_offset_minutes): the
    messages of a file written before hold none (UTC), those recorded after the upgrade theirs."""
    path = tmp_path / "v8.db"
    store = SQLiteStore(path)
    await store.setup()
    await record(store, "desk", "eve", [msg("m1")])
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 8 wrote messages
        conn.execute("ALTER TABLE messages DROP COLUMN utc_offset_minutes")
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    try:
        chicago = msg("m2", seconds=1)
        chicago = chicago.model_copy(
            update={"created_at": chicago.created_at.astimezone(timezone(timedelta(hours=-5)))}
        )
        await record(store, "desk", "eve", [chicago], now_seconds=1)
        loaded = await store.load_messages("desk", 0, 10)
        offsets = [(m.message_id, m.utc_offset_minutes) for m in loaded]
        assert offsets == [("m1", None), ("m2", -300)]
        assert loaded[1].created_at == at(1)
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def test_a_schema_9_files_facts_read_as_utc_and_new_ones_keep_their_offset(
    tmp_path: Path,
) -> None:
    """Schema 10 keeps the UTC offset each fact was said in (said_utc_offset_minutes): the facts
    of a file written before hold none (UTC), those formed after the upgrade theirs."""
    path = tmp_path / "v9.db"
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store).start()
    await former.form(
        add("f1", "Alice lives in Paris", unit(1, 0)).model_copy(update={"said_at": at(1)})
    )
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 9 wrote facts
        conn.execute("ALTER TABLE facts DROP COLUMN said_utc_offset_minutes")
        conn.execute("UPDATE meta SET value = '9' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    try:
        chicago = at(2).astimezone(timezone(timedelta(hours=-5)))
        former.store = store
        await former.form(
            add("f2", "Alice flies to Rome", unit(0, 1)).model_copy(update={"said_at": chicago})
        )
        facts = await store.get_facts(["f1", "f2"])
        said = [(f.fact_id, f.said_at, f.said_utc_offset_minutes) for f in facts]
        assert said == [("f1", at(1), None), ("f2", at(2), -300)]
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def test_a_schema_10_files_facts_are_found_by_their_words_folded(tmp_path: Path) -> None:
    """Schema 11 indexes each fact's text folded as every store folds it (rules.text.fold):
    the facts of a file written before, indexed as written, are found by "hauptstrasse" once
    the file is opened, and the index follows the writes after."""
    path = tmp_path / "v10.db"
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store).start()
    await former.form(
        add("f1", "Lives on Hauptstraße in Berlin", unit(1, 0)),
        add("f2", "Drinks H₂O only", unit(0, 1)),
        add("f3", "Collects old maps", unit(0, 0, 1)),
    )
    await store.close()
    with closing(sqlite3.connect(path, autocommit=True)) as conn:
        _as_schema_10(conn)
        terms = {t for (t,) in conn.execute("SELECT term FROM facts_fts_vocab")}
        assert {"hauptstraß", "h₂o", "map"} <= terms  # as schema 10 indexed them

    for _ in range(2):  # setup is idempotent
        store = SQLiteStore(path)
        await store.setup()
        await store.close()
    store = SQLiteStore(path)
    await store.setup()
    former.store = store

    async def found(query: str) -> list[str]:
        return [h.fact.fact_id for h in await store.text_search(query, user_filter(), limit=5)]

    try:
        assert [await found(q) for q in ("hauptstrasse", "Hauptstraße", "h2o", "maps")] == [
            ["f1"], ["f1"], ["f2"], ["f3"],
        ]  # fmt: skip
        await former.form(
            FactUpdate(fact_id="f1", expected_version=1, content="Lives on Königstraße",
                       embedding=unit(1, 0)),
            add("f4", "Eats phở bò", unit(1, 1)),
        )  # fmt: skip
        assert [await found(q) for q in ("hauptstrasse", "konigstrasse", "pho")] == [
            [], ["f1"], ["f4"],
        ]  # fmt: skip
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("INSERT INTO facts_fts (facts_fts, rank) VALUES ('integrity-check', 1)")
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),) == ("19",)


async def test_a_fact_the_previous_version_inserts_is_stamped_for_the_recheck(
    tmp_path: Path,
) -> None:
    """Schema 13 stamps when each fact was inserted: a commit's re-check reads the facts inserted
    since its candidates were read (an imported fact keeps its source's updated_at). A file of
    schema 12 gains the column (its facts unstamped: read by updated_at, as before), and a fact
    that a process of schema 12, still writing during the upgrade, imports without a stamp is
    stamped all the same: a formation's near-duplicate of it is decided again."""
    path = tmp_path / "v12.db"
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store).start()
    await former.form(add("f1", "Alice lives in Paris", unit(0, 1)))
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 12 wrote facts
        conn.executescript(DROP_INSERTED_AT)
        conn.execute("ALTER TABLE facts DROP COLUMN inserted_at")
        conn.execute("UPDATE meta SET value = '12' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    former.store = store
    read = datetime.now(UTC)  # a formation reads its candidates (none), then the import lands
    imported = imported_long_ago(read)
    fact_row = SQLiteDb.fact_row

    async def schema_12_row(db: SQLiteDb, put: PutFact) -> dict[str, object]:
        row = await fact_row(db, put)
        del row["inserted_at"]  # a process of schema 12 knows no such column
        return row

    try:
        with patch.object(SQLiteDb, "fact_row", schema_12_row):
            assert (await store.import_facts([imported], [vec(1, 0)])).inserted == 1
        await assert_restatement_stale(store, former, read, "f2")
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        stamped = dict(conn.execute("SELECT fact_id, inserted_at IS NOT NULL FROM facts"))
    assert stamped == {"f1": 0, "mem0-1": 1}


async def test_a_file_of_schema_14_keeps_its_reflections_and_learns_when_new_ones_were_said(
    tmp_path: Path,
) -> None:
    """Schema 15 keeps when a reflection was said (a consolidation merges in that order): a file
    of schema 14 gains the column, its reflections read said_at None (ordered as formed, as
    before), and a reflection formed after the upgrade keeps its time."""
    path = tmp_path / "v14.db"
    store = SQLiteStore(path)
    await store.setup()
    former = await Former(store).start()
    await former.form(reflections=[reflection(USER_KEY, 0, "Alice likes jazz", seconds=10)])
    await store.close()
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 14 wrote reflections
        conn.execute("ALTER TABLE reflections DROP COLUMN said_at")
        conn.execute("UPDATE meta SET value = '14' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    former.store = store
    said = reflection(USER_KEY, 1, "Alice gave up coffee", seconds=20)
    try:
        await former.form(reflections=[said.model_copy(update={"said_at": at(15)})])
        buffered = await store.unabsorbed_reflections(USER_KEY)
    finally:
        await store.close()
    assert [(r.content, r.said_at) for r in buffered] == [
        ("Alice likes jazz", None),
        ("Alice gave up coffee", at(15)),
    ]
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def _blob_said_from_5(path: Path) -> None:
    """A file holding the user's blob, version 1, said from at(5)."""
    store = SQLiteStore(path)
    await store.setup()
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="VERSION: 1\n- jazz", word_limit=50,
        absorbed_ids=[], at=at(10), said_from=at(5),
    )  # fmt: skip
    await store.close()


async def test_a_file_of_schema_15_keeps_its_blobs_and_learns_where_new_ones_begin(
    tmp_path: Path,
) -> None:
    """Schema 16 keeps when the earliest reflection a blob absorbed was said (one said
    before it is older than the blob): a file of schema 15 gains the column, its blob reads
    said_from None (every reflection news to it, as before), and the next consolidation
    keeps its time."""
    path = tmp_path / "v15.db"
    await _blob_said_from_5(path)
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 15 wrote blobs
        conn.execute("ALTER TABLE consolidated DROP COLUMN said_from")
        conn.execute("ALTER TABLE consolidated DROP COLUMN said_from_version")
        conn.execute("UPDATE meta SET value = '15' WHERE key = 'schema_version'")

    store = SQLiteStore(path)
    await store.setup()
    try:
        old = await store.get_consolidated(USER_KEY)
        new = await store.commit_consolidation(
            USER_KEY, expected_version=1, content="VERSION: 2\n- jazz, tea", word_limit=50,
            absorbed_ids=[], at=at(20), said_from=at(15),
        )  # fmt: skip
        stored = await store.get_consolidated(USER_KEY)
    finally:
        await store.close()
    assert old is not None and (old.content, old.said_from) == ("VERSION: 1\n- jazz", None)
    assert stored == new and new.said_from == at(15)
    with closing(sqlite3.connect(path)) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)


async def test_a_file_of_schema_16_keeps_its_sessions_and_marks_a_switch_change(
    tmp_path: Path,
) -> None:
    """Schema 17 keeps the memory switches a session's messages were recorded under
    (memory/switch_marks.py): a file of schema 16 gains the column, its pending session reads
    no marks (formed under the switches then, as before), and a change of a switch marks it."""
    path = tmp_path / "v16.db"
    store = SQLiteStore(path)
    await store.setup()
    await a_pending_session(store)
    with closing(sqlite3.connect(path)) as conn, conn:  # as schema 16 wrote session states
        conn.execute("ALTER TABLE session_agents DROP COLUMN switch_marks")
        conn.execute("UPDATE meta SET value = '16' WHERE key = 'schema_version'")

    await assert_upgraded_session_marked(SQLiteStore(path))


async def test_a_blob_the_previous_version_consolidates_does_not_know_where_it_begins(
    tmp_path: Path,
) -> None:
    """A process of the previous version writes a blob's content and version, not said_from (a
    column it does not know): what it absorbed may have been said before it, so the blob reads
    as not knowing (h196)."""
    path = tmp_path / "roll.db"
    await _blob_said_from_5(path)
    with closing(sqlite3.connect(path)) as conn, conn:  # the previous version's upsert
        conn.execute("UPDATE consolidated SET content = 'VERSION: 2\n- jazz, tea', version = 2")
    store = SQLiteStore(path)
    await store.setup()
    try:
        blob = await store.get_consolidated(USER_KEY)
    finally:
        await store.close()
    assert blob is not None and (blob.version, blob.said_from) == (2, None)
