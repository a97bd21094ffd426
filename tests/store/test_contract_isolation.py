"""Contract, both backends: the store's half of issue #11. An agent's view of a session is its own
(cursor from its joining, participants, end and purge), user memory belongs to a participant, and
text-search scores do not depend on what the caller may not see."""

from __future__ import annotations

import asyncio

import pytest

from memory.errors import InvalidInputError, NotFoundError
from memory.models import MessageIn, RecordOutcome, ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import (
    CHARS_PER_TOKEN,
    WEIGHTS,
    add,
    at,
    commit,
    msg,
    record,
    reflection,
    unit,
    user_filter,
)


async def _record_as(
    store: MemoryStore,
    session_id: str,
    agent_id: str,
    messages: list[MessageIn],
    may_join: set[str],
) -> RecordOutcome:
    return await store.record_messages(
        session_id, agent_id, messages, weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
        now=at(0), may_join=may_join,
    )  # fmt: skip


async def test_a_caller_for_some_agents_joins_no_session_holding_another(
    store: MemoryStore,
) -> None:
    """record_messages(may_join=the caller's agents): a session holding another agent is refused
    as unknown, nothing written; a new session, or one of the caller's agents, takes it. Without
    may_join (the Python client) any agent joins, as before."""
    await record(store, "bob-s1", "bob", [msg("c1", user_id="carol")])
    before = await store.load_messages("bob-s1", 0, 100)
    with pytest.raises(NotFoundError, match="no session 'bob-s1'"):
        await _record_as(store, "bob-s1", "eve", [msg("e1", user_id="carol")], {"eve"})
    session = await store.get_session("bob-s1")
    assert session is not None and session.agent_ids == ("bob",)
    assert await store.load_messages("bob-s1", 0, 100) == before
    assert await store.get_session_agent_state("bob-s1", "eve") is None

    # A key for both agents joins; a new session takes any caller.
    both = await _record_as(store, "bob-s1", "eve", [msg("e2")], {"eve", "bob"})
    assert both.inserted == 1 and both.state.cursor_seq == 1
    assert (await _record_as(store, "new-s", "eve", [msg("n1")], {"eve"})).inserted == 1
    assert (await _record_as(store, "new-s", "eve", [msg("n2")], {"eve"})).inserted == 1
    with pytest.raises(NotFoundError):
        await _record_as(store, "new-s", "bob", [msg("n2")], {"bob"})  # a duplicate too
    await record(store, "new-s", "bob", [msg("n3")])  # no may_join: no check
    session = await store.get_session("new-s")
    assert session is not None and session.agent_ids == ("eve", "bob")


async def test_two_callers_racing_into_a_new_session_one_gets_in(store: MemoryStore) -> None:
    """The check is in the transaction that writes: of two callers for different agents
    recording at once into a new session, the second to commit is refused and writes nothing."""
    for i in range(3):
        sid = f"race-{i}"
        results = await asyncio.gather(
            _record_as(store, sid, "eve", [msg(f"e{i}", user_id="mallory")], {"eve"}),
            _record_as(store, sid, "bob", [msg(f"b{i}", user_id="carol")], {"bob"}),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, BaseException)]
        assert len(refused) == 1 and isinstance(refused[0], NotFoundError), results
        session = await store.get_session(sid)
        assert session is not None and len(session.agent_ids) == 1
        said = await store.load_messages(sid, 0, 10)
        assert [m.agent_id for m in said] == list(session.agent_ids)


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
