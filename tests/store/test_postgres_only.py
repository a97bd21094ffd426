"""What only the PostgreSQL backend has: its versioned migrations, run at every start."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta, timezone
from unittest.mock import patch

import numpy as np
import psycopg
import pytest

from memory.formation_commit import FactUpdate
from memory.ids import content_hash
from memory.models import AgentConfig, Fact
from memory.store.postgres import PostgresStore
from memory.store.postgres.codec import fact_body, text_columns
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.migrations import MIGRATIONS
from memory.store.postgres.pool import Conn
from memory.store.postgres.search import fact_count_sql
from memory.store.rules.text import bm25, stemmed_tokens, tokenize
from memory.store.rules.writes import PutFact
from memory.store.sql.facts import fact_filter_sql
from tests.conftest import fresh_schema
from tests.postgres_server import PostgresServer, children_of, running
from tests.store.builders import (
    Former,
    add,
    assert_guests_marked,
    assert_restatement_stale,
    at,
    imported_long_ago,
    msg,
    record,
    record_unmarked,
    unit,
    user_filter,
    vec,
)

pytestmark = pytest.mark.postgres


def _applied(dsn: str) -> list[int]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()
    return [int(row[0]) for row in rows]


async def test_workers_starting_together_apply_each_migration_once(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    stores = [PostgresStore(dsn, pool_size=1) for _ in range(4)]
    await asyncio.gather(*(store.setup() for store in stores))
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    # A restart applies nothing again and keeps what is stored.
    await stores[0].put_embeddings("m", {"h": np.array([1.0, 0.0], dtype=np.float32)})
    again = PostgresStore(dsn, pool_size=1)
    await again.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    assert list(await again.get_embeddings("m", ["h"])) == ["h"]
    for store in (*stores, again):
        await store.close()


async def test_a_database_at_an_older_version_is_brought_up_to_date(postgres_dsn: str) -> None:
    dsn = fresh_schema(postgres_dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:  # what a version-1 deployment holds
        conn.execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute(MIGRATIONS[0].encode())
        conn.execute("INSERT INTO schema_migrations (version) VALUES (1)")
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = 'facts'::regclass "
            "AND attname = 'embedding'"
        ).fetchone()
    assert row is not None and row[0] == "m"  # migrations 2, 14: in the row unless too wide
    await store.close()


def _version_2_database(dsn: str, facts: list[Fact], accessed: int = 0) -> None:
    """What a version-2 deployment holds: migrations 1-2 applied, these facts (each accessed
    ``accessed`` times, last at 60 s), a 2-d embedding model."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, sql in enumerate(MIGRATIONS[:2], start=1):
            conn.execute(sql.encode())
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        for fact in facts:
            conn.execute(
                "INSERT INTO facts (fact_id, agent_id, user_id, scope, hash, updated_at, "
                "embedding, embedding_model, terms, body, access_count, last_accessed_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, '[1,0]', 'm', array_to_tsvector(%s), %s, %s, %s)",
                (fact.fact_id, fact.agent_id, fact.user_id, fact.scope, fact.hash,
                 fact.updated_at, text_columns(fact.content)["terms"], fact_body(fact), accessed,
                 at(60) if accessed else None),
            )  # fmt: skip
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('embedding_model', 'm'), "
            "('embedding_dimension', '2')"
        )


async def test_migration_3_fills_said_at_from_the_facts_stored_before_it(postgres_dsn: str) -> None:
    """The context FIFO selects by the said_at column: facts of a version-2 database read theirs
    from their bodies, and those without one count from when they were stored."""
    dsn = fresh_schema(postgres_dsn)
    said = Fact(fact_id="said", agent_id="a1", user_id="u1", scope="user",
                content="Fact said at 500", hash=content_hash("Fact said at 500"),
                embedding_model="m", said_at=at(500), formed_at=at(100),
                updated_at=at(100))  # fmt: skip
    unsaid = said.model_copy(update={"fact_id": "unsaid", "content": "Fact without provenance",
                                     "hash": content_hash("Fact without provenance"),
                                     "said_at": None})  # fmt: skip
    _version_2_database(dsn, [said, unsaid])

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    recent = await store.recent_facts(user_filter(), since=at(200), limit=5)
    assert [f.fact_id for f in recent] == ["said"]
    everything = await store.recent_facts(user_filter(), since=at(0), limit=5)
    assert [f.fact_id for f in everything] == ["said", "unsaid"]
    await store.close()


async def test_migration_10_gives_sessions_holding_a_guests_message_their_guests(
    postgres_dsn: str,
) -> None:
    """A version-9 database's sessions: those holding a guest's message (role user, no user
    id) have guests once migrated (beside a user, a group chat); a user message or another
    role without a user id is no guest's."""
    dsn = fresh_schema(postgres_dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations (version integer PRIMARY KEY, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, sql in enumerate(MIGRATIONS[:9], start=1):
            conn.execute(sql.encode())
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
        said = {
            "guests": [("user", "u1"), ("user", None)],
            "alone": [("user", "u1"), ("agent", None)],
        }
        for sid, messages in said.items():
            conn.execute(
                "INSERT INTO sessions (session_id, created_at, last_seq) VALUES (%s, %s, 2)",
                (sid, at(0)),
            )
            conn.execute(
                "INSERT INTO session_agents (session_id, agent_id) VALUES (%s, 'a1')", (sid,)
            )
            conn.execute(
                "INSERT INTO session_users (session_id, user_id) VALUES (%s, 'u1')", (sid,)
            )
            conn.execute(
                "INSERT INTO session_agent_users (session_id, agent_id, user_id) "
                "VALUES (%s, 'a1', 'u1')",
                (sid,),
            )
            for seq, (role, user_id) in enumerate(messages, start=1):
                conn.execute(
                    "INSERT INTO messages (session_id, seq, message_id, role, content, "
                    "created_at, user_id, agent_id, weighted_tokens) "
                    "VALUES (%s, %s, %s, %s, 'hello', %s, %s, 'a1', 1)",
                    (sid, seq, f"m{seq}", role, at(seq), user_id),
                )
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1))
    for agent_id in (None, "a1"):
        guests = await store.get_session("guests", agent_id)
        alone = await store.get_session("alone", agent_id)
        assert guests is not None and guests.has_guests and guests.is_group
        assert alone is not None and not alone.has_guests and not alone.is_group
    await store.close()


def test_migration_10_adds_the_column_only() -> None:
    """Its transaction holds an ACCESS EXCLUSIVE lock on sessions: it reads no messages (the
    sessions with guests are marked at setup, after it committed: mark_guests)."""
    assert "messages" not in MIGRATIONS[9]


async def test_a_guest_recorded_by_the_previous_version_is_marked_at_the_next_start(
    postgres_dsn: str,
) -> None:
    """A rolling upgrade: after this version's first start (migration 10 applied), a writer of
    the previous one records a guest beside a user without marking the session. The next
    start of any worker marks it."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    await record_unmarked(store, "guests", "a1", [msg("m1"), msg("m2", user_id=None)])
    await record(store, "alone", "a1", [msg("m1"), msg("m2", role="agent")])
    unmarked = await store.get_session("guests", "a1")
    assert unmarked is not None and not unmarked.has_guests  # as the old writer left it
    await store.close()

    for _ in range(2):  # idempotent
        store = PostgresStore(dsn, pool_size=1)
        await store.setup()
        await assert_guests_marked(store)
        await store.close()


async def test_fact_counts_follow_every_write_to_facts(postgres_dsn: str) -> None:
    """Text search's N comes from fact_counts (migration 6), kept by triggers: after adds in
    both scopes, an update, an invalidation and an erasure it still equals counting the valid
    facts of each filter, and the scores are those of that count."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=2)
    await store.setup()
    former = await Former(store).start(messages=8)
    await former.form(
        add("f1", "Rides a bike to work", unit(1, 0)),
        add("f2", "Plays chess on Sundays", unit(0, 1)),
        add("g1", "The team ships on Fridays", unit(1, 1), scope="agent"),
    )
    await former.form(add("f3", "Rides a bike to the lake", unit(0, 0, 1), user_id="u2"))
    await former.form(FactUpdate(fact_id="f2", expected_version=1, content="Plays go",
                                 embedding=unit(0, 1)))  # fmt: skip
    await store.invalidate_fact("f1", at=at(400))
    filters = [user_filter(), user_filter(user_id="u2"), user_filter(agent_scope=False),
               user_filter(user_id=None)]  # fmt: skip

    def counted() -> list[tuple[int, int]]:
        pairs = []
        with psycopg.connect(dsn) as conn:
            for flt in filters:
                where, params = fact_filter_sql(flt)
                exact = conn.execute(f"SELECT count(*) FROM facts AS f WHERE {where}".encode(),
                                     params).fetchone()  # fmt: skip
                sql, count_params = fact_count_sql(flt)
                kept = conn.execute(sql.encode(), count_params).fetchone()
                assert exact is not None and kept is not None
                pairs.append((int(exact[0]), int(kept[0])))
        return pairs

    assert counted() == [(2, 2), (2, 2), (1, 1), (1, 1)]
    await store.forget_user("u2", agent_id="a1", at=at(500))
    assert counted() == [(2, 2), (1, 1), (1, 1), (1, 1)]
    hits = await store.text_search("bike", user_filter(user_id="u2"), limit=5)
    assert hits == []  # u2's bike fact is gone, u1's is invalid
    # Folding deltas (one statement in 20, at random) keeps every sum: 400 deltas netting 0.
    with psycopg.connect(dsn) as conn:
        for n in (1, -1) * 200:
            conn.execute(
                "SELECT fact_counts_apply(jsonb_build_array(jsonb_build_object("
                "'agent_id', 'a1', 'scope', 'agent', 'user_key', '', 'n', %s::bigint)))",
                (n,),
            )
        rows = conn.execute("SELECT count(*) FROM fact_counts").fetchone()
    assert counted() == [(2, 2), (1, 1), (1, 1), (1, 1)]
    assert rows is not None and rows[0] < 400  # folded: a read sums a few rows
    await store.close()


async def test_migrations_keep_the_facts_of_an_older_database(postgres_dsn: str) -> None:
    """A version-2 database's facts come through migrations 3-7: access counts move to
    fact_access, the content column and the counts of text search are filled from them, and
    text search scores them as it scores facts stored since."""
    dsn = fresh_schema(postgres_dsn)
    fact = Fact(fact_id="f1", agent_id="a1", user_id="u1", scope="user", content="Rides a bike",
                hash=content_hash("Rides a bike"), embedding_model="m", formed_at=at(0),
                updated_at=at(0))  # fmt: skip
    _version_2_database(dsn, [fact], accessed=3)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    [kept] = await store.get_facts(["f1"])
    assert (kept.content, kept.access_count, kept.last_accessed_at) == ("Rides a bike", 3, at(60))
    [hit] = await store.text_search("bike", user_filter(), limit=5)
    assert hit.fact.fact_id == "f1"  # no stored counts (migration 7): counted from its content
    assert hit.score == pytest.approx(bm25(["bike"], {"f1": "Rides a bike"}, 1)["f1"])
    with psycopg.connect(dsn) as conn:
        sql, params = fact_count_sql(user_filter())
        row = conn.execute(sql.encode(), params).fetchone()
    assert row is not None and row[0] == 1
    await store.close()


async def test_text_search_scores_stored_counts_as_the_shared_bm25_of_the_contents(
    postgres_dsn: str,
) -> None:
    """Text search reads each candidate's length and repeated stems from columns (migration 7),
    never its content: its scores are still the shared BM25 of the candidates' contents, with
    repeated and inflected words counted as stemming them counts them."""
    store = PostgresStore(fresh_schema(postgres_dsn), pool_size=2)
    await store.setup()
    contents = {
        "f1": "Bikes, bikes and more bikes: she rides her bike daily",
        "f2": "Fixes bikes on Sundays",
        "f3": "Riding to the lake on a Sunday, riding back at night",
        "f4": "Plays chess",
    }
    former = await Former(store).start(messages=1)
    await former.form(
        *(add(fid, text, unit(1, i)) for i, (fid, text) in enumerate(contents.items()))
    )
    query = "bike riding on Sundays"
    stems = set(stemmed_tokens(query))
    matches = {fid: text for fid, text in contents.items() if stems & set(stemmed_tokens(text))}
    expected = bm25(tokenize(query), matches, len(contents))
    hits = await store.text_search(query, user_filter(), limit=5)
    assert {h.fact.fact_id: h.score for h in hits} == pytest.approx(expected)
    assert len(set(expected.values())) == len(expected)  # no tie: one right order
    assert [h.fact.fact_id for h in hits] == sorted(expected, key=lambda f: -expected[f])
    await store.close()


async def test_migration_11_gives_the_agents_of_older_sessions_nothing_withheld(
    postgres_dsn: str,
) -> None:
    """A version-10 database's (session, agent) rows withhold nothing once migrated, and a
    forget under one agent of a session another shares withholds from then on."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    await record(store, "desk", "bob", [msg("m1", user_id="alice")])
    await record(store, "desk", "eve", [msg("m2", user_id="alice", seconds=1)])
    await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 10 left session_agents
        conn.execute("ALTER TABLE session_agents DROP COLUMN withheld")
        conn.execute("ALTER TABLE messages DROP COLUMN utc_offset_minutes")  # migration 12's
        conn.execute("ALTER TABLE facts DROP COLUMN said_utc_offset_minutes")  # migration 13's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 11")

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) >= 11
    for agent_id in ("bob", "eve"):
        state = await store.get_session_agent_state("desk", agent_id)
        assert state is not None and state.withheld == {}
    [counts] = await store.forget_user("alice", agent_id="eve", at=at(10))
    assert counts.messages == 0  # bob holds both
    eve = await store.get_session_agent_state("desk", "eve")
    # alice was alone in the session: the replies are withheld too ("": rules.withheld.REPLIES)
    assert eve is not None and eve.withheld == {"": 2, "alice": 2}
    await store.close()


async def test_migration_12_reads_older_messages_as_utc_and_keeps_new_offsets(
    postgres_dsn: str,
) -> None:
    """A version-11 database's messages hold no UTC offset once migrated (None: UTC); those
    recorded after it keep the offset they were sent with."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    await record(store, "desk", "eve", [msg("m1")])
    await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 11 left messages
        conn.execute("ALTER TABLE messages DROP COLUMN utc_offset_minutes")
        conn.execute("ALTER TABLE facts DROP COLUMN said_utc_offset_minutes")  # migration 13's
        conn.execute("DELETE FROM schema_migrations WHERE version >= 12")

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) >= 12
    india = msg("m2", seconds=1)
    india = india.model_copy(
        update={"created_at": india.created_at.astimezone(timezone(timedelta(minutes=330)))}
    )
    await record(store, "desk", "eve", [india], now_seconds=1)
    loaded = await store.load_messages("desk", 0, 10)
    assert [(m.message_id, m.utc_offset_minutes) for m in loaded] == [("m1", None), ("m2", 330)]
    assert loaded[1].created_at == at(1)
    await store.close()


async def test_migration_13_reads_older_facts_as_utc_and_keeps_new_offsets(
    postgres_dsn: str,
) -> None:
    """A version-12 database's facts read as said in UTC; later ones keep their offset."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    former = await Former(store).start()
    await former.form(add("f1", "Paris", unit(1, 0)).model_copy(update={"said_at": at(1)}))
    await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 12 left facts
        conn.execute("ALTER TABLE facts DROP COLUMN said_utc_offset_minutes")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 13")

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) >= 13
    former.store = store
    india = at(2).astimezone(timezone(timedelta(minutes=330)))
    await former.form(add("f2", "Rome", unit(0, 1)).model_copy(update={"said_at": india}))
    facts = await store.get_facts(["f1", "f2"])
    said = [(f.fact_id, f.said_at, f.said_utc_offset_minutes) for f in facts]
    assert said == [("f1", at(1), None), ("f2", at(2), 330)]
    with psycopg.connect(dsn) as conn:  # beside the body, which a previous version reads
        keys = conn.execute("SELECT count(*) FROM facts WHERE body ? 'said_utc_offset_minutes'")
        assert keys.fetchone() == (0,)
    await store.close()


async def test_reads_after_a_server_restart_answer_at_once(
    postgres_server: PostgresServer | None,
) -> None:
    """A restart (a failover, maintenance) kills every pooled connection: the first read meets
    one, and its second try must not take the next dead one (an agent's turn would fail once per
    pooled connection)."""
    if postgres_server is None:
        pytest.skip("POSTGRES_DSN names an outside server: not one this test may kill")
    store = PostgresStore(fresh_schema(postgres_server.dsn), pool_size=4)
    await store.setup()
    try:
        await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))

        async def busy(conn: Conn) -> None:
            await conn.execute("SELECT pg_sleep(0.2)")

        # Four reads at once leave four connections in the pool.
        await asyncio.gather(*(store._read(busy) for _ in range(4)))
        postgres_server.kill()
        postgres_server.start()
        for _ in range(4):
            agent = await store.get_agent("eve")
            assert agent is not None and agent.name == "Eve"
    finally:
        await store.close()


async def test_a_killed_server_leaves_no_process_behind(
    postgres_server: PostgresServer | None,
) -> None:
    """The crash tests kill the server and start it again at once: a backend still running then
    holds the shared memory, and the start is refused. Backends leave the postmaster's process
    group (setsid), so a kill of that group alone left them running (CI at a35bbfd)."""
    if postgres_server is None:
        pytest.skip("POSTGRES_DSN names an outside server: not one this test may kill")
    assert postgres_server.process is not None
    connections = [psycopg.connect(postgres_server.dsn) for _ in range(4)]
    server_processes = children_of(postgres_server.process.pid)
    assert len(server_processes) >= 4  # one backend per connection, and the server's own
    try:
        postgres_server.kill()
        assert [pid for pid in server_processes if running(pid)] == []
    finally:
        for connection in connections:
            connection.close()
        postgres_server.start()
    postgres_server.execute("SELECT 1")


async def test_a_start_neither_waits_for_nor_blocks_writes_on_facts(postgres_dsn: str) -> None:
    """Every worker, serve and CLI start opens the store: with the vector index built, it must
    not queue a lock on facts behind an open write (an import batch, a re-embed), which every
    later formation's commit would then queue behind."""
    dsn = fresh_schema(postgres_dsn)
    running = PostgresStore(dsn, pool_size=2)
    await running.setup()
    try:
        former = await Former(running).start()
        await former.form(add("f1", "Likes tea", unit(1, 0)))
        with psycopg.connect(dsn) as long_writer:
            long_writer.execute("UPDATE facts SET hash = hash WHERE false")  # open, uncommitted
            starting = PostgresStore(dsn, pool_size=1)
            await asyncio.wait_for(starting.setup(), 10)  # before: waited for the rollback
            await starting.close()
            long_writer.rollback()
    finally:
        await running.close()


async def test_migration_15_stamps_what_the_previous_version_inserts_for_the_recheck(
    postgres_dsn: str,
) -> None:
    """A commit's re-check reads the facts inserted since its candidates were read (an imported
    fact keeps its source's updated_at): a version-14 database's facts have no stamp (read by
    updated_at, as before), and a fact that a process of version 14, still writing during the
    upgrade, imports without one is stamped by the column's default all the same."""
    dsn = fresh_schema(postgres_dsn)
    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    former = await Former(store).start()
    await former.form(add("f1", "Alice lives in Paris", unit(0, 1)))
    await store.close()
    with psycopg.connect(dsn, autocommit=True) as conn:  # as version 14 left facts
        conn.execute("ALTER TABLE facts DROP COLUMN inserted_at")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 15")

    store = PostgresStore(dsn, pool_size=1)
    await store.setup()
    assert _applied(dsn) == list(range(1, len(MIGRATIONS) + 1)) and len(MIGRATIONS) >= 15
    former.store = store
    read = datetime.now(UTC)  # a formation reads its candidates (none), then the import lands
    imported = imported_long_ago(read)
    fact_row = PostgresDb.fact_row

    async def version_14_row(db: PostgresDb, put: PutFact) -> dict[str, object]:
        row = await fact_row(db, put)
        del row["inserted_at"]  # a process of version 14 knows no such column
        return row

    try:
        with patch.object(PostgresDb, "fact_row", version_14_row):
            assert (await store.import_facts([imported], [vec(1, 0)])).inserted == 1
        await assert_restatement_stale(store, former, read, "f2")
    finally:
        await store.close()
    with psycopg.connect(dsn) as conn:
        stamped = conn.execute(
            "SELECT fact_id, inserted_at IS NOT NULL FROM facts ORDER BY fact_id"
        ).fetchall()
    assert stamped == [("f1", False), ("mem0-1", True)]
