"""Contract, both backends: the store's half of issue #11. An agent's view of a session is its own
(cursor from its joining, participants, end and purge), user memory belongs to a participant, and
text-search scores do not depend on what the caller may not see."""

from __future__ import annotations

import pytest

from memory.errors import InvalidInputError
from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import add, at, commit, msg, record, reflection, unit, user_filter


async def test_case_2_user_memory_needs_a_participant_and_anonymous_speakers_are_none(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("m1", user_id="u1"), msg("m2", user_id=None)])
    session = await store.get_session("s1", "a1")
    assert session is not None and session.user_ids == ("u1",)  # the anonymous one is nobody

    stranger = add("f1", "Banks at Evilbank", unit(1, 0), user_id="u2")
    with pytest.raises(InvalidInputError, match="participant"):
        await store.commit_formation(commit(new_cursor=2, ops=[stranger]))
    u2_key = ScopeKey(scope="user", agent_id="a1", user_id="u2")
    with pytest.raises(InvalidInputError, match="participant"):
        await store.commit_formation(commit(new_cursor=2, reflections=[reflection(u2_key, 1)]))
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None and state.cursor_seq == 0  # nothing written

    mine = add("f2", "Lives in Paris", unit(0, 1), user_id="u1")
    result = await store.commit_formation(commit(new_cursor=2, ops=[mine]))
    assert result.facts_added == 1


async def test_case_3_ending_and_purging_are_one_agents_own(store: MemoryStore) -> None:
    await record(store, "sA", "eve", [msg("m1", user_id="u1")])
    await record(store, "sA", "mallory", [msg("m2", user_id="u1")])
    for agent_id, cursor in (("eve", 0), ("mallory", 1)):
        key = ScopeKey(scope="session", agent_id=agent_id, session_id="sA")
        await store.commit_formation(
            commit(
                session_id="sA", agent_id=agent_id, expected_cursor=cursor, new_cursor=2,
                reflections=[reflection(key, 1, session_id="sA")],
            )
        )  # fmt: skip

    await store.end_session("sA", "mallory", at(10))

    eve = await store.get_session("sA", "eve")
    mallory = await store.get_session("sA", "mallory")
    assert eve is not None and eve.ended_at is None
    assert mallory is not None and mallory.ended_at == at(10)
    assert await store.purge_ended_sessions(at(100), limit=10) == ["sA"]
    eve_key = ScopeKey(scope="session", agent_id="eve", session_id="sA")
    mallory_key = ScopeKey(scope="session", agent_id="mallory", session_id="sA")
    assert await store.count_unabsorbed(eve_key) == 1  # eve's session memory is untouched
    assert await store.count_unabsorbed(mallory_key) == 0
    assert await store.purge_ended_sessions(at(100), limit=10) == []


async def test_case_4_a_joining_agent_starts_at_the_head_with_its_own_participants(
    store: MemoryStore,
) -> None:
    await record(store, "sA", "eve", [msg("m1", user_id="alice"), msg("m2", user_id="bob")])
    joined = await store.record_messages(
        "sA", "mallory", [msg("m3", user_id="carol")], weights={}, chars_per_token=4.0,
        now=at(1),
    )  # fmt: skip

    assert (joined.state.cursor_seq, joined.state.last_seq) == (2, 3)
    assert joined.state.pending_messages == 1
    mallory = await store.get_session("sA", "mallory")
    eve = await store.get_session("sA", "eve")
    whole = await store.get_session("sA")
    assert mallory is not None and mallory.user_ids == ("carol",)
    assert eve is not None and eve.user_ids == ("alice", "bob", "carol")
    assert whole is not None and whole.user_ids == ("alice", "bob", "carol")
    assert await store.get_session("sA", "nobody") is None
    # ... in a group chat all the same (002 rule 3 counts the session's users): no user memory.
    assert mallory.session_user_ids == ("alice", "bob", "carol") and mallory.is_group
    # alice spoke before mallory came: no user memory of hers is mallory's to form.
    with pytest.raises(InvalidInputError, match="participant"):
        await store.commit_formation(
            commit(
                session_id="sA", agent_id="mallory", expected_cursor=2, new_cursor=3,
                ops=[add("f1", "Email alice@example.com", unit(1, 0), user_id="alice")],
            )
        )  # fmt: skip


async def test_case_6_text_scores_do_not_move_with_another_agents_facts(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("m1", user_id="u1")])
    await store.commit_formation(
        commit(
            ops=[
                add("f1", "Alice enjoys sailing on weekends", unit(1, 0)),
                add("f2", "Alice drinks green tea", unit(0, 1)),
            ]
        )
    )
    before = await store.text_search("sailing", user_filter(), limit=5)

    await record(store, "s2", "a2", [msg("n1", user_id="u9")])
    others = [
        add(f"g{i}", f"Sailing sailing fact number {i}", unit(1, i), user_id="u9")
        for i in range(12)
    ]
    await store.commit_formation(commit(session_id="s2", agent_id="a2", ops=others))
    after = await store.text_search("sailing", user_filter(), limit=5)

    assert [h.fact.fact_id for h in after] == [h.fact.fact_id for h in before] == ["f1"]
    assert after[0].score == pytest.approx(before[0].score)
