"""Contract: a forget of a user under one agent, in a session other agents share (a group chat
of several backends), deletes only the user's messages no other agent still holds; the rest stay
for the others and are withheld from that agent (memory/store/rules/withheld.py).

The session "desk": bob records alice (seq 1) and his reply (2); eve joins at the head (cursor
2) and records alice (3), carol (4) and alice (5); bob forms up to 3. Alice's messages: 1 is
bob's record, 3 eve's record that bob formed already, 5 eve's record that bob has not formed
yet (he heard it). A forget of alice under eve deletes 3 only."""

from __future__ import annotations

from memory.models import SessionAgentState
from memory.store.base import MemoryStore
from tests.store.builders import at, commit, msg, record


async def _desk(store: MemoryStore) -> None:
    await record(
        store, "desk", "bob",
        [msg("a1", "I take insulin", user_id="alice", seconds=1),
         msg("r2", "Noted.", role="agent", seconds=2)],
    )  # fmt: skip
    await record(
        store, "desk", "eve",
        [msg("a3", "hello eve", user_id="alice", seconds=3),
         msg("c4", "hi all", user_id="carol", seconds=4),
         msg("a5", "I live in Lisbon", user_id="alice", seconds=5)],
    )  # fmt: skip
    formed = await store.commit_formation(
        commit(session_id="desk", agent_id="bob", expected_cursor=0, new_cursor=3)
    )
    assert not formed.discarded_for_erasure


async def _state(store: MemoryStore, agent_id: str) -> SessionAgentState:
    state = await store.get_session_agent_state("desk", agent_id)
    assert state is not None
    return state


def _pending(state: SessionAgentState) -> tuple[int, int, float]:
    return state.cursor_seq, state.pending_messages, state.pending_weighted_tokens


async def _ids(store: MemoryStore) -> list[str]:
    return [m.message_id for m in await store.load_messages("desk", 0, 100)]


async def test_a_forget_under_one_agent_keeps_what_another_agent_holds(store: MemoryStore) -> None:
    await _desk(store)
    bob_before, eve_before = await _state(store, "bob"), await _state(store, "eve")
    assert _pending(bob_before)[:2] == (3, 2) and _pending(eve_before)[:2] == (2, 3)

    [counts] = await store.forget_user("alice", agent_id="eve", at=at(100))

    assert counts.messages == 1, f"only a3 (eve's record, formed by bob) goes: {counts}"
    assert await _ids(store) == ["a1", "r2", "c4", "a5"], "bob's record and his unformed a5 stay"
    bob = await _state(store, "bob")
    assert _pending(bob) == _pending(bob_before), "bob's pending unchanged"
    eve = await _state(store, "eve")
    carol_only = (2, 1, eve_before.pending_weighted_tokens - 3.0 - 4.0)  # c4, not a3 nor a5
    assert _pending(eve) == carol_only, "none of alice's kept messages is eve's to form"
    assert eve.withheld == {"alice": 5} and bob.withheld == {}
    # Alice is no participant of eve's any more; bob's and the session's she stays.
    eve_view, bob_view = (
        await store.get_session("desk", "eve"),
        await store.get_session("desk", "bob"),
    )
    assert eve_view is not None and eve_view.user_ids == ("carol",)
    assert bob_view is not None and bob_view.user_ids == ("alice", "carol")
    # Eve sees none of them as sources, nor in her export of alice; bob's stays his.
    sources = ["a1", "c4", "a5"]
    assert [m.message_id for m in await store.get_messages("desk", sources, "eve")] == ["c4"]
    assert [m.message_id for m in await store.get_messages("desk", sources, "bob")] == sources
    eve_export = await store.export_data(agent_id="eve", user_id="alice", messages=True)
    assert eve_export.messages == []
    bob_export = await store.export_data(agent_id="bob", user_id="alice", messages=True)
    assert [m.message_id for m in bob_export.messages] == ["a1"]
    eve_whole = await store.export_data(agent_id="eve", user_id=None, messages=True)
    assert [m.message_id for m in eve_whole.messages] == ["r2", "c4"]


async def test_formations_after_the_forget_count_nothing_withheld(store: MemoryStore) -> None:
    await _desk(store)
    await store.forget_user("alice", agent_id="eve", at=at(100))
    carol = await store.erasure_epochs("eve", ["carol"])

    # Eve forms a3's place: what stays pending after it is c4 alone, not the withheld a5.
    part = commit(session_id="desk", agent_id="eve", expected_cursor=2, new_cursor=3)
    result = await store.commit_formation(part.model_copy(update={"user_epochs": carol}))
    assert result.state is not None and result.state.pending_messages == 1
    pending = [(await _state(store, a)).pending_messages for a in ("eve", "bob")]
    assert pending == [1, 2], "eve: c4 (not the withheld a5); bob: c4 and a5"
    eve = await _state(store, "eve")
    assert (eve.cursor_seq, eve.withheld) == (3, {"alice": 5})
    rest = commit(session_id="desk", agent_id="eve", expected_cursor=3, new_cursor=5, seconds=110)
    await store.commit_formation(rest.model_copy(update={"user_epochs": carol}))
    assert _pending(await _state(store, "eve")) == (5, 0, 0.0)
    # Bob forms a5 as any message of his.
    bob = commit(session_id="desk", agent_id="bob", expected_cursor=3, new_cursor=5, seconds=120)
    await store.commit_formation(bob)
    assert _pending(await _state(store, "bob")) == (5, 0, 0.0)
    assert await _ids(store) == ["a1", "r2", "c4", "a5"]


async def test_alices_new_messages_are_eves_and_a_second_forget_withholds_them_too(
    store: MemoryStore,
) -> None:
    await _desk(store)
    await store.forget_user("alice", agent_id="eve", at=at(100))
    await record(store, "desk", "eve", [msg("a6", "I moved to Oslo", user_id="alice", seconds=6)])
    assert (await _state(store, "eve")).pending_messages == 2, "c4 and the new a6"
    eve_view = await store.get_session("desk", "eve")
    assert eve_view is not None and eve_view.user_ids == ("carol", "alice")
    bob_before = await _state(store, "bob")

    [again] = await store.forget_user("alice", agent_id="eve", at=at(200))

    # a6: eve's record that bob has not formed: kept for him, withheld from eve as well.
    assert again.messages == 0, f"bob holds a6: {again}"
    assert await _ids(store) == ["a1", "r2", "c4", "a5", "a6"]
    eve = await _state(store, "eve")
    assert (eve.pending_messages, eve.withheld) == (1, {"alice": 6})
    assert _pending(await _state(store, "bob")) == _pending(bob_before)


async def test_a_forget_under_the_last_holder_deletes_what_was_kept(store: MemoryStore) -> None:
    await _desk(store)
    await store.forget_user("alice", agent_id="eve", at=at(100))
    eve_before = await _state(store, "eve")

    [counts] = await store.forget_user("alice", agent_id="bob", at=at(200))

    # Eve holds none of them (withheld from her): a1 and a5 go.
    assert counts.messages == 2, f"a1 and a5 were kept for bob, and go with him: {counts}"
    assert await _ids(store) == ["r2", "c4"]
    session = await store.get_session("desk")
    assert session is not None and session.user_ids == ("carol",)
    assert _pending(await _state(store, "bob"))[:2] == (3, 1)  # c4
    assert _pending(await _state(store, "eve")) == _pending(eve_before)


async def test_a_forget_for_every_agent_deletes_everything_of_the_user(store: MemoryStore) -> None:
    await _desk(store)
    await store.forget_user("alice", agent_id="eve", at=at(100))

    counts = await store.forget_user("alice", agent_id=None, at=at(200))

    assert sum(c.messages for c in counts) == 2, f"a1, a5: all that was left of her: {counts}"
    assert await _ids(store) == ["r2", "c4"]
    session = await store.get_session("desk")
    assert session is not None and session.user_ids == ("carol",)
    assert _pending(await _state(store, "bob"))[:2] == (3, 1)
    assert _pending(await _state(store, "eve"))[:2] == (2, 1)


async def test_without_another_agent_holding_them_all_go_as_before(store: MemoryStore) -> None:
    """Bob has formed everything: of alice's messages he holds his own record a1 only, which
    stays (withheld from eve); eve's records a3 and a5 go."""
    await _desk(store)
    bob = commit(session_id="desk", agent_id="bob", expected_cursor=3, new_cursor=5, seconds=120)
    await store.commit_formation(bob)

    [counts] = await store.forget_user("alice", agent_id="eve", at=at(100))

    assert counts.messages == 2, f"a3 and a5 go, bob's a1 stays: {counts}"
    assert await _ids(store) == ["a1", "r2", "c4"]
    assert (await _state(store, "eve")).withheld == {"alice": 5}
    assert _pending(await _state(store, "bob"))[:2] == (5, 0)


async def test_a_forget_under_one_agent_leaves_it_nothing_of_the_users_conversation_to_form(
    store: MemoryStore,
) -> None:
    """Alice was the session's only person, with two agents (h218 D3): a forget under bob left
    him the replies to form, his own and eve's quoting what alice told her, which would form her
    memory again. Nothing before the head is his to form; eve still forms what she holds."""
    await record(
        store, "clinic", "bob",
        [msg("m1", "I was diagnosed with asthma", user_id="alice", seconds=1),
         msg("r1", "Sorry to hear about your asthma", role="agent", seconds=2)],
    )  # fmt: skip
    await record(
        store, "clinic", "eve",
        [msg("m2", "My inhaler is expensive", user_id="alice", seconds=3),
         msg("r2", "Asthma inhalers can be costly", role="agent", seconds=4)],
    )  # fmt: skip
    eve_before = await store.get_session_agent_state("clinic", "eve")

    await store.forget_user("alice", agent_id="bob", at=at(100))

    bob = await store.get_session_agent_state("clinic", "bob")
    eve = await store.get_session_agent_state("clinic", "eve")
    assert bob is not None and (bob.cursor_seq, bob.pending_messages) == (4, 0)
    assert eve is not None and eve_before is not None
    assert (eve.cursor_seq, eve.pending_messages) == (eve_before.cursor_seq, 2)
