"""Contract: reflection buffers, consolidation compare-and-set, scope versions, purging (both
backends)."""

from __future__ import annotations

import pytest

from memory.errors import ConflictError
from memory.ids import text_hash
from memory.models import ConsolidatedMemory, ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import (
    AGENT_KEY,
    USER_KEY,
    Former,
    add,
    at,
    msg,
    record,
    reflection,
    unit,
)

SESSION_KEY = ScopeKey(scope="session", agent_id="a1", session_id="s1")


async def test_reflections_are_buffered_per_scope(store: MemoryStore) -> None:
    former = await Former(store).start()
    first = await former.form(
        reflections=[
            reflection(USER_KEY, 1, "u first", seconds=10),
            reflection(USER_KEY, 2, "u second", seconds=20),
            reflection(AGENT_KEY, 1, "a first", seconds=15),
        ]
    )
    second = await former.form(
        reflections=[
            reflection(USER_KEY, 2, "u second, rewritten", seconds=20),  # known id: left alone
            reflection(USER_KEY, 3, "u third", seconds=30),
        ]
    )

    assert first.reflections_added == 3
    assert first.buffered == {USER_KEY.key: 2, AGENT_KEY.key: 1}
    assert second.reflections_added == 1
    assert second.buffered == {USER_KEY.key: 3}
    assert await store.count_unabsorbed(USER_KEY) == 3
    assert await store.count_unabsorbed(SESSION_KEY) == 0
    oldest = await store.unabsorbed_reflections(USER_KEY)
    assert [r.content for r in oldest] == ["u first", "u second", "u third"]
    assert oldest[0].scope_key == USER_KEY
    assert (oldest[0].source_session_id, oldest[0].formed_at) == ("s1", at(10))
    assert oldest[0].absorbed_into_version is None
    newest = await store.unabsorbed_reflections(USER_KEY, newest_first=True, limit=2)
    assert [r.content for r in newest] == ["u third", "u second"]
    assert [r.content for r in await store.unabsorbed_reflections(USER_KEY, limit=1)] == ["u first"]


async def _buffer(store: MemoryStore, count: int) -> list[str]:
    former = await Former(store).start()
    reflections = [reflection(USER_KEY, i, seconds=i) for i in range(count)]
    await former.form(reflections=reflections)
    return [r.reflection_id for r in reflections]


async def test_consolidation_replaces_the_blob_and_absorbs(store: MemoryStore) -> None:
    ids = await _buffer(store, 3)
    assert await store.get_consolidated(USER_KEY) is None

    blob = await store.commit_consolidation(
        USER_KEY, expected_version=0, content="Blob one", word_limit=300,
        absorbed_ids=ids[:2], at=at(500),
    )  # fmt: skip

    expected = ConsolidatedMemory(
        scope_key=USER_KEY, content="Blob one", version=1, word_limit=300, updated_at=at(500)
    )
    assert blob == expected
    assert await store.get_consolidated(USER_KEY) == expected
    assert [r.reflection_id for r in await store.unabsorbed_reflections(USER_KEY)] == ids[2:]

    manual = await store.commit_consolidation(
        USER_KEY, expected_version=1, content="Blob two", word_limit=300,
        absorbed_ids=[], at=at(600), edited_by="manual",
    )  # fmt: skip
    assert (manual.version, manual.edited_by) == (2, "manual")
    assert await store.get_consolidated(USER_KEY) == manual


@pytest.mark.parametrize("conflict", ["stale-version", "absorbed", "unknown", "other-scope"])
async def test_consolidation_conflicts_write_nothing(store: MemoryStore, conflict: str) -> None:
    ids = await _buffer(store, 3)
    blob = await store.commit_consolidation(
        USER_KEY, expected_version=0, content="Blob one", word_limit=300,
        absorbed_ids=ids[:1], at=at(500),
    )  # fmt: skip
    versions = await store.scope_versions([USER_KEY.key])
    expected_version, absorbed = 1, [ids[1]]
    match conflict:
        case "stale-version":
            expected_version = 0
        case "absorbed":
            absorbed.append(ids[0])
        case "unknown":
            absorbed.append("r_unknown")
        case "other-scope":
            absorbed.append(await _agent_reflection(store))

    with pytest.raises(ConflictError):
        await store.commit_consolidation(
            USER_KEY, expected_version=expected_version, content="Blob two", word_limit=300,
            absorbed_ids=absorbed, at=at(600),
        )  # fmt: skip

    assert await store.get_consolidated(USER_KEY) == blob
    assert [r.reflection_id for r in await store.unabsorbed_reflections(USER_KEY)] == ids[1:]
    assert await store.scope_versions([USER_KEY.key]) == versions


async def test_consolidation_refuses_a_reflection_edited_since_its_draft(
    store: MemoryStore,
) -> None:
    """A person corrects a buffered reflection while the blob is being drafted from its old text:
    the commit is refused (the consolidation drafts again), the correction stays buffered."""
    ids = await _buffer(store, 2)
    drafted = {
        r.reflection_id: text_hash(r.content) for r in await store.unabsorbed_reflections(USER_KEY)
    }
    await store.edit_reflection(ids[1], content="corrected by a person")

    with pytest.raises(ConflictError, match="edited since the draft"):
        await store.commit_consolidation(
            USER_KEY, expected_version=0, content="Blob of the old text", word_limit=300,
            absorbed_ids=ids, at=at(500), absorbed_hashes=drafted,
        )  # fmt: skip

    assert await store.get_consolidated(USER_KEY) is None
    buffered = await store.unabsorbed_reflections(USER_KEY)
    assert [r.content for r in buffered][1] == "corrected by a person"
    redrafted = {r.reflection_id: text_hash(r.content) for r in buffered}
    blob = await store.commit_consolidation(
        USER_KEY, expected_version=0, content="Blob of the correction", word_limit=300,
        absorbed_ids=ids, at=at(600), absorbed_hashes=redrafted,
    )  # fmt: skip
    assert blob.version == 1 and await store.count_unabsorbed(USER_KEY) == 0


async def _agent_reflection(store: MemoryStore) -> str:
    """The id of a buffered reflection of the agent scope (not the user scope under test)."""
    other = await Former(store, "s2").start(messages=1)
    agent_reflection = reflection(AGENT_KEY, 1, session_id="s2")
    await other.form(reflections=[agent_reflection])
    return agent_reflection.reflection_id


# ---------------------------------------------------------------- scope versions


async def test_scope_versions_bump_on_every_write_to_the_key(store: MemoryStore) -> None:
    keys = [AGENT_KEY.key, USER_KEY.key, SESSION_KEY.key, "user:a1:u2"]
    assert await store.scope_versions(keys) == dict.fromkeys(keys, 0)
    former = await Former(store).start()

    await former.form(add("f1", "An agent fact", unit(1, 0), scope="agent"))
    after_agent_fact = await store.scope_versions(keys)
    await former.form(add("f2", "A user fact", unit(0, 1)))
    after_user_fact = await store.scope_versions(keys)
    await former.form(reflections=[reflection(SESSION_KEY, 1)])
    after_reflection = await store.scope_versions(keys)
    await store.commit_consolidation(
        SESSION_KEY, expected_version=0, content="Session blob", word_limit=200,
        absorbed_ids=[reflection(SESSION_KEY, 1).reflection_id], at=at(500),
    )  # fmt: skip
    after_blob = await store.scope_versions(keys)

    assert after_agent_fact[AGENT_KEY.key] > 0
    assert after_agent_fact[USER_KEY.key] == after_agent_fact[SESSION_KEY.key] == 0
    assert after_user_fact[USER_KEY.key] > 0
    assert after_user_fact[AGENT_KEY.key] == after_agent_fact[AGENT_KEY.key]
    assert after_reflection[SESSION_KEY.key] > 0
    assert after_blob[SESSION_KEY.key] > after_reflection[SESSION_KEY.key]
    assert after_blob[USER_KEY.key] == after_user_fact[USER_KEY.key]
    assert after_blob["user:a1:u2"] == 0


# ---------------------------------------------------------------- purging


async def test_purge_deletes_session_memory_of_sessions_ended_before(store: MemoryStore) -> None:
    for session_id, ended in (("s1", 100), ("s2", 300), ("s3", None)):
        key = ScopeKey(scope="session", agent_id="a1", session_id=session_id)
        former = await Former(store, session_id).start(messages=1)
        await former.form(
            reflections=[
                reflection(key, 1, session_id=session_id),
                reflection(key, 2, session_id=session_id),
                reflection(USER_KEY, int(session_id[1:]), session_id=session_id),
            ]
        )
        await store.commit_consolidation(
            key, expected_version=0, content=f"About {session_id}", word_limit=200,
            absorbed_ids=[reflection(key, 1).reflection_id], at=at(50),
        )  # fmt: skip
        if ended is not None:
            await store.end_session(session_id, "a1", at(ended))
    s1_key = ScopeKey(scope="session", agent_id="a1", session_id="s1")
    s2_key = ScopeKey(scope="session", agent_id="a1", session_id="s2")

    assert await store.purge_ended_sessions(at(200), limit=10) == ["s1"]

    assert await store.get_consolidated(s1_key) is None
    assert await store.count_unabsorbed(s1_key) == 0
    assert await store.get_consolidated(s2_key) is not None
    assert await store.count_unabsorbed(s2_key) == 1
    assert await store.count_unabsorbed(USER_KEY) == 3  # user memory outlives sessions
    assert await store.purge_ended_sessions(at(200), limit=10) == []
    assert await store.purge_ended_sessions(at(1000), limit=10) == ["s2"]


async def test_memory_of_what_is_said_after_a_purge_is_purged_in_its_turn(
    store: MemoryStore,
) -> None:
    """A message recorded into a session ended and purged long ago: what is formed of it is the
    session's memory again, purged once the session has been quiet past the date (it was kept
    for ever: the pair stayed marked purged)."""
    key = ScopeKey(scope="session", agent_id="a1", session_id="s1")
    former = await Former(store).start(messages=1)
    await store.end_session("s1", "a1", at(100))
    assert await store.purge_ended_sessions(at(200), limit=10) == ["s1"]

    await record(store, "s1", "a1", [msg("late", "one more thing", seconds=300)])
    await former.form(reflections=[reflection(key, 1, "said after the purge")])

    # Said after the date: not purged yet. Quiet past a later date: purged.
    assert await store.purge_ended_sessions(at(250), limit=10) == []
    assert await store.count_unabsorbed(key) == 1
    assert await store.purge_ended_sessions(at(400), limit=10) == ["s1"]
    assert await store.count_unabsorbed(key) == 0
