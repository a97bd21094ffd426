"""MongoDB-only behaviour: the Atlas Search path against the $text + numpy path, index setup,
concurrent transactions and exact timestamps.

The Atlas-path tests always run on an in-process mongoeco server (it serves $vectorSearch and
$search once the indexes exist in its engine), even when MONGODB_URI names a real server.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from pymongo import AsyncMongoClient
from pymongo.errors import OperationFailure

from memory.errors import ConflictError
from memory.models import FactFilter
from memory.store.mongo import MongoStore
from memory.store.mongo.indexes import (
    FILTER_FIELDS,
    TEXT_INDEX,
    VECTOR_INDEX,
    plan_search_indexes,
    search_index_specs,
)
from memory.store.mongo.search import AtlasMode
from tests.mongo_server import EcoServer, running_mongoeco, search_index_specs_without_filters
from tests.store.builders import (
    USER_KEY,
    Former,
    add,
    assert_guests_marked,
    at,
    msg,
    record,
    record_unmarked,
    reflection,
    unit,
    user_filter,
    vec,
)

pytestmark = pytest.mark.mongo

Hits = list[tuple[str, float]]


@pytest.fixture(scope="module")
async def eco() -> AsyncIterator[EcoServer]:
    async with running_mongoeco() as server:
        yield server


@pytest.fixture
async def client(eco: EcoServer) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
    mongo: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(eco.uri)
    try:
        yield mongo
    finally:
        await mongo.close()


@pytest.fixture
def database() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


async def _store(
    client: AsyncMongoClient[dict[str, Any]], database: str, mode: AtlasMode
) -> MongoStore:
    store = MongoStore(client, database, atlas_search=mode)
    await store.setup()
    return store


async def _vector(store: MongoStore, query: list[float], flt: FactFilter, limit: int = 10) -> Hits:
    hits = await store.vector_search(vec(*query), flt, limit=limit)
    return [(h.fact.fact_id, h.score) for h in hits]


async def _text(store: MongoStore, query: str, flt: FactFilter, limit: int = 10) -> Hits:
    return [(h.fact.fact_id, h.score) for h in await store.text_search(query, flt, limit=limit)]


# ---------------------------------------------------------------- Atlas path vs fallback path


async def test_atlas_and_fallback_paths_return_the_same_scored_facts(
    eco: EcoServer, client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    fallback = await _store(client, database, "off")
    former = await Former(fallback).start()
    await former.form(
        add("tea", "Drinks green tea every morning", unit(1, 0)),
        add("coffee", "Drinks black coffee, never tea", unit(0.6, 0.8)),
        add("maps", "Collects old maps", unit(0, 1)),
        add("team", "Leads the green team", unit(0, 0, 1), scope="agent"),
        add("other", "Drinks green tea too", unit(1, 0), user_id="u2"),
        # Words in fewer than half of the facts: BM25's IDF stays above its floor.
        add("chess", "Plays chess on Sundays", unit(0, 0, 0, 1)),
        add("novels", "Reads crime novels", unit(0, 0, 0, 1)),
        add("runs", "Runs marathons", unit(0, 0, 0, 1)),
    )
    assert await eco.create_search_indexes(database, 4) == [VECTOR_INDEX, TEXT_INDEX]
    atlas = await _store(client, database, "on")
    auto = await _store(client, database, "auto")
    flt = user_filter()

    vector = await _vector(atlas, [1, 0], flt)
    assert [fid for fid, _ in vector[:3]] == ["tea", "coffee", "chess"]  # ties by id
    # Exact cosines, not the server's (1 + cos) / 2 or its float32 approximation.
    assert [s for _, s in vector] == pytest.approx([1.0, 0.6] + [0.0] * 5, abs=1e-6)
    assert await _vector(fallback, [1, 0], flt) == vector
    assert await _vector(auto, [1, 0], flt) == vector

    text = await _text(atlas, "green tea", flt)
    assert [fid for fid, _ in text] == ["tea", "team", "coffee"]
    assert all(score > 0 for _, score in text)
    assert await _text(fallback, "green tea", flt) == text
    assert await _text(auto, "green tea", flt) == text
    assert await _text(atlas, "maps", flt, limit=1) == await _text(fallback, "maps", flt, limit=1)


async def test_forced_atlas_path_needs_the_indexes_and_auto_falls_back(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    auto = await _store(client, database, "auto")
    former = await Former(auto).start()
    await former.form(add("tea", "Drinks green tea", unit(1, 0)))
    atlas = await _store(client, database, "on")

    with pytest.raises(OperationFailure):
        await atlas.vector_search(vec(1, 0), user_filter(), limit=5)
    with pytest.raises(OperationFailure):
        await atlas.text_search("tea", user_filter(), limit=5)
    assert [fid for fid, _ in await _vector(auto, [1, 0], user_filter())] == ["tea"]
    assert [fid for fid, _ in await _text(auto, "tea", user_filter())] == ["tea"]


@pytest.mark.parametrize("mode", ["on", "off"])
async def test_the_filter_runs_inside_the_search(
    eco: EcoServer, client: AsyncMongoClient[dict[str, Any]], database: str, mode: AtlasMode
) -> None:
    """u2's facts are the nearest vectors and the best text matches; u1 still gets its own
    facts up to the limit, and never one of u2's."""
    setup = await _store(client, database, "off")
    former = await Former(setup).start()
    await former.form(
        *(add(f"u2-{i}", f"sailing sailing sailing {i}", unit(1, 0.01 * i), user_id="u2")
          for i in range(6)),
        add("u1-a", "Went sailing once", unit(0.5, 1)),
        add("u1-b", "Likes sailing boats", unit(0.4, 1)),
    )  # fmt: skip
    await eco.create_search_indexes(database, 4)
    store = await _store(client, database, mode)
    u1 = user_filter(agent_scope=False)

    assert [fid for fid, _ in await _vector(store, [1, 0], u1, limit=2)] == ["u1-a", "u1-b"]
    assert {fid for fid, _ in await _text(store, "sailing", u1, limit=2)} == {"u1-a", "u1-b"}
    u2 = {fid for fid, _ in await _vector(store, [1, 0], user_filter("a1", "u2"), limit=3)}
    assert u2 <= {f"u2-{i}" for i in range(6)} and len(u2) == 3


# ---------------------------------------------------------------- index setup


async def test_search_index_setup_is_idempotent(eco: EcoServer, database: str) -> None:
    assert await eco.create_search_indexes(database, 4) == [VECTOR_INDEX, TEXT_INDEX]
    assert await eco.create_search_indexes(database, 4) == []
    # A new embedding dimension changes the vector index only.
    assert await eco.create_search_indexes(database, 8) == [VECTOR_INDEX]
    assert await eco.create_search_indexes(database, 8) == []


def test_atlas_definitions_filter_inside_both_searches() -> None:
    vector, text = search_index_specs(384)
    assert (vector.name, vector.type, text.name, text.type) == (
        VECTOR_INDEX, "vectorSearch", TEXT_INDEX, "search",
    )  # fmt: skip
    fields = vector.definition["fields"]
    assert fields[0] == {
        "type": "vector", "path": "embedding", "numDimensions": 384, "similarity": "cosine",
    }  # fmt: skip
    assert {f["path"] for f in fields if f["type"] == "filter"} == set(FILTER_FIELDS)
    mapped = text.definition["mappings"]["fields"]
    assert mapped["content"] == {"type": "string", "analyzer": "lucene.standard"}
    assert set(FILTER_FIELDS) <= set(mapped)
    stripped, same_text = search_index_specs_without_filters(384)
    assert stripped.definition["fields"] == [fields[0]]
    assert same_text == text


def test_plan_ignores_server_defaults_and_updates_changed_definitions() -> None:
    wanted = search_index_specs(384)
    listed = [
        {
            "name": spec.name,
            "status": "READY",
            # Atlas echoes the definition with its defaults added.
            "latestDefinition": {**spec.definition, "storedSource": False},
        }
        for spec in wanted
    ]
    assert plan_search_indexes(listed, wanted) == ([], [])
    assert plan_search_indexes([], wanted) == (wanted, [])
    assert plan_search_indexes(listed, search_index_specs(768)) == (
        [],
        [search_index_specs(768)[0]],
    )


async def test_setup_is_idempotent_and_creates_the_unique_indexes(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    store = await _store(client, database, "off")
    db = client[database]
    before = {name: await db[name].index_information() for name in ("messages", "facts")}
    await store.setup()
    after = {name: await db[name].index_information() for name in ("messages", "facts")}

    assert before == after
    unique = {
        (name, tuple(k for k, _ in info["key"]))
        for name, indexes in after.items()
        for info in indexes.values()
        if info.get("unique")
    }
    assert ("messages", ("session_id", "message_id")) in unique
    assert ("messages", ("session_id", "seq")) in unique
    assert ("facts", ("agent_id", "user_key", "scope", "hash")) in unique


# ---------------------------------------------------------------- transactions under concurrency


async def test_concurrent_recorders_get_distinct_contiguous_seqs(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    store = await _store(client, database, "off")
    batches = [[msg(f"m{i}-{j}", seconds=i) for j in range(2)] for i in range(4)]
    batches.append([msg("m0-0"), msg("extra")])  # one message id raced by two recorders

    await asyncio.gather(*(record(store, "s1", f"a{i % 2}", b) for i, b in enumerate(batches)))

    messages = await store.load_messages("s1", 0, 100)
    assert [m.seq for m in messages] == list(range(1, 10))
    assert len({m.message_id for m in messages}) == 9
    for agent in ("a0", "a1"):
        state = await store.get_session_agent_state("s1", agent)
        assert state is not None
        # Every message after the agent joined is pending (an agent joins at the head).
        assert state.last_seq == 9
        assert state.cursor_seq + state.pending_messages == 9


async def test_concurrent_consolidations_let_exactly_one_win(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    store = await _store(client, database, "off")
    former = await Former(store).start()
    reflections = [reflection(USER_KEY, i, seconds=i) for i in range(2)]
    await former.form(reflections=reflections)

    results = await asyncio.gather(
        *(
            store.commit_consolidation(
                USER_KEY,
                expected_version=0,
                content=f"Blob {i}",
                word_limit=300,
                absorbed_ids=[r.reflection_id for r in reflections],
                at=datetime.now(UTC),
            )
            for i in range(3)
        ),
        return_exceptions=True,
    )

    assert sum(isinstance(r, ConflictError) for r in results) == 2
    blob = await store.get_consolidated(USER_KEY)
    assert blob is not None and blob.version == 1
    assert blob in results
    assert await store.count_unabsorbed(USER_KEY) == 0
    assert (await store.scope_versions([USER_KEY.key]))[USER_KEY.key] == 2  # formation + blob


# ---------------------------------------------------------------- storage details


async def test_timestamps_round_trip_to_the_microsecond(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    store = await _store(client, database, "off")
    moment = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
    message = msg("m1").model_copy(update={"created_at": moment})

    await store.record_messages("s1", "a1", [message], weights={}, chars_per_token=4.0, now=moment)

    [stored] = await store.load_messages("s1", 0, 1)
    assert stored.created_at == moment
    session = await store.get_session("s1")
    assert session is not None and (session.created_at, session.last_message_at) == (moment, moment)


async def test_documents_of_session_wide_ending_are_migrated_at_setup(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    db = client.get_database(database)
    ended = at(50).isoformat(timespec="microseconds")
    await db.sessions.insert_one(
        {"_id": "old", "created_at": ended, "ended_at": ended, "purged": False,
         "agent_ids": ["a1", "a2"], "user_ids": ["u1", "u2"], "last_seq": 0,
         "last_message_at": None}
    )  # fmt: skip
    for agent_id in ("a1", "a2"):
        await db.session_agents.insert_one(
            {"session_id": "old", "agent_id": agent_id, "cursor_seq": 0, "last_seq": 0,
             "pending_messages": 0, "pending_weighted_tokens": 0.0, "last_message_at": None,
             "formations": 0}
        )  # fmt: skip
    await _store(client, database, "off")
    store = await _store(client, database, "off")  # idempotent

    for agent_id in ("a1", "a2"):
        view = await store.get_session("old", agent_id)
        assert view is not None and (view.ended_at, view.user_ids) == (at(50), ("u1", "u2"))
    assert await store.purge_ended_sessions(at(100), limit=10) == ["old", "old"]


async def test_sessions_stored_before_guests_are_migrated_at_setup(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    """Session documents written before ``has_guests`` (by a version that never walked the
    messages): those holding a guest's message (role user, no user id) have guests after the
    next start."""
    store = await _store(client, database, "off")
    await record(store, "guests", "a1", [msg("m1", user_id="u1"), msg("m2", user_id=None)])
    await record(store, "alone", "a1", [msg("m1", user_id="u1"), msg("m2", role="agent")])
    db = client.get_database(database)
    await db.sessions.update_many({}, {"$unset": {"has_guests": ""}})  # as written before
    await db.meta.delete_one({"_id": "guests_walked"})  # the first walk: every message
    before = await store.get_session("guests", "a1")
    assert before is not None and not before.has_guests  # a missing field reads False

    for _ in range(2):  # idempotent
        store = await _store(client, database, "off")
        for agent_id in (None, "a1"):
            guests = await store.get_session("guests", agent_id)
            alone = await store.get_session("alone", agent_id)
            assert guests is not None and guests.has_guests and guests.is_group
            assert alone is not None and not alone.has_guests and not alone.is_group


async def test_a_guest_recorded_by_the_previous_version_is_marked_at_the_next_start(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    """A rolling upgrade: after this version's first start (its walk recorded), a writer of the
    previous one records a guest beside a user without marking the session. The next start
    marks it: its walk covers what was inserted since the previous walk began."""
    store = await _store(client, database, "off")  # walks, and records where the next starts
    await record_unmarked(store, "guests", "a1", [msg("m1"), msg("m2", user_id=None)])
    await record(store, "alone", "a1", [msg("m1"), msg("m2", role="agent")])
    unmarked = await store.get_session("guests", "a1")
    assert unmarked is not None and not unmarked.has_guests  # as the old writer left it

    for _ in range(2):  # idempotent
        store = await _store(client, database, "off")
        await assert_guests_marked(store)


async def test_a_float64_vector_stored_before_reads_as_float32(
    client: AsyncMongoClient[dict[str, Any]], database: str
) -> None:
    """Documents written before vectors were kept as float32 hold the float64 values they were
    given: they read as the float32 vector the other backends keep, with no migration."""
    store = await _store(client, database, "off")
    given = unit(1, 1)
    await Former(store).start(1)
    await Former(store).form(add("f1", "Likes green tea", unit(1, 0)))
    await store._db.facts.update_one({"_id": "f1"}, {"$set": {"embedding": given}})

    data = await store.export_data(agent_id=None, user_id=None, messages=False)
    assert {f.fact_id: v for f, v in data.facts} == {
        "f1": [float(x) for x in np.asarray(given, dtype=np.float32)]
    }
