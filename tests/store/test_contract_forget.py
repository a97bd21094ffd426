"""Contract: forget_user hard-deletes one user's memories (both backends), and a formation that
was running for that user meanwhile cannot write them again (the erasure epoch at commit)."""

from __future__ import annotations

import pytest

from memory.errors import ConflictError
from memory.formation_commit import FactUpdate
from memory.ids import text_hash
from memory.models import ScopeKey
from memory.store.base import MemoryStore
from tests.store.builders import (
    MODEL,
    USER_KEY,
    Former,
    add,
    at,
    commit,
    msg,
    record,
    reflection,
    unit,
    user_filter,
    vec,
)

U2_KEY = ScopeKey(scope="user", agent_id="a1", user_id="u2")


async def _populate(store: MemoryStore) -> None:
    """a1/s1 (u1 and u2 in turn): f1 "Likes green tea", f3 "Plays the cello" (updated once), f2 agent
    scope; a1/s3 (u2 alone): f4 "Likes green tea"; s4: a group chat of u1 and u2; a2/s2 (u1): g1.
    Reflections and a blob for u1, a reflection for u2, cache entries for both users' texts."""
    former = await Former(store).start()
    await former.form(add("f1", "Likes green tea", unit(1, 0)))
    await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
    await former.form(add("f3", "Plays the violin", unit(0, 0, 1)))
    await former.form(
        FactUpdate(
            fact_id="f3", expected_version=1, content="Plays the cello",
            embedding=unit(0, 0, 1, 1), reason="corrected",
        ),
        reflections=[reflection(USER_KEY, 1, "u1 likes short answers")],
    )  # fmt: skip
    await Former(store, session_id="s3").start(1)  # u1 alone, nothing formed
    await record(store, "s3b", "a1", [msg("s3b-1", "I am u2", user_id="u2", seconds=1)])
    u2 = Former(store, session_id="s3b")
    await u2.form(
        add("f4", "Likes green tea", unit(1, 0), user_id="u2"),
        reflections=[reflection(U2_KEY, 1, "u2 is formal", session_id="s3b")],
    )
    await record(
        store, "s4", "a1",
        [msg("s4-1", "hi from u1", seconds=1), msg("s4-2", "hi from u2", user_id="u2", seconds=2)],
    )  # fmt: skip
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="u1: tea, cello", word_limit=100,
        absorbed_ids=[reflection(USER_KEY, 1).reflection_id], at=at(200),
    )  # fmt: skip
    other = await Former(store, session_id="s2", agent_id="a2").start(1)
    await other.form(add("g1", "Likes black coffee", unit(1, 1)))
    texts = ["Likes green tea", "Plays the violin", "Plays the cello"]
    await store.put_embeddings(MODEL, {text_hash(t): vec(1) for t in texts})


async def test_forget_deletes_the_users_memories_of_the_agent_and_nothing_else(
    store: MemoryStore,
) -> None:
    await _populate(store)
    # Warm the vector search (SQLite caches the agent's vectors in memory).
    assert await store.vector_search(vec(0, 0, 1, 1), user_filter(), limit=5)

    [counts] = await store.forget_user("u1", agent_id="a1", at=at(300))

    assert (counts.agent_id, counts.user_id, counts.epoch) == ("a1", "u1", 1)
    assert (counts.facts, counts.reflections, counts.blobs) == (2, 1, 1)
    # s3 (u1 alone with a1) goes whole; in s1 (u1 and u2 in turn) and s4 only u1's messages go.
    assert (counts.sessions, counts.messages) == (1, 3 + 1 + 1)
    # The violin and cello entries go; green tea stays, u2's fact still holds that text.
    assert counts.embedding_cache == 2

    everything = await store.list_facts(user_filter(), include_invalid=True)
    assert [f.fact_id for f in everything] == ["f2"]  # the agent-scope fact stays
    assert await store.get_facts(["f1", "f3"]) == []
    assert await store.text_search("cello violin tea", user_filter(), limit=10) == []
    hits = await store.vector_search(vec(0, 0, 1, 1), user_filter(), limit=5)
    assert [h.fact.fact_id for h in hits] == ["f2"]
    assert await store.get_consolidated(USER_KEY) is None
    assert await store.list_reflections(USER_KEY, include_absorbed=True) == []
    s1 = await store.get_session("s1")
    assert s1 is not None and s1.user_ids == ("u2",)
    assert await store.get_session("s3") is None
    s4 = await store.get_session("s4")
    assert s4 is not None and s4.user_ids == ("u2",)
    a1_view = await store.get_session("s4", agent_id="a1")  # the agent's own participants too
    assert a1_view is not None and a1_view.user_ids == ("u2",)
    assert [m.message_id for m in await store.load_messages("s4", 0, 10)] == ["s4-2"]
    state = await store.get_session_agent_state("s4", "a1")
    assert state is not None and state.pending_messages == 1
    cache = await store.get_embeddings(
        MODEL, [text_hash(t) for t in ("Likes green tea", "Plays the cello")]
    )
    assert list(cache) == [text_hash("Likes green tea")]

    # Nobody else lost anything: u2's memories, and u1's memories of another agent.
    u2_facts = await store.list_facts(user_filter(user_id="u2", agent_scope=False))
    assert [f.fact_id for f in u2_facts] == ["f4"]
    assert [r.content for r in await store.list_reflections(U2_KEY)] == ["u2 is formal"]
    assert await store.get_session("s3b") is not None
    assert [f.fact_id for f in await store.list_facts(user_filter("a2"))] == ["g1"]
    assert await store.erasure_epochs("a1", ["u1", "u2"]) == {"u1": 1, "u2": 0}
    assert await store.erasure_epochs("a2", ["u1"]) == {"u1": 0}


async def test_forget_for_every_agent(store: MemoryStore) -> None:
    await _populate(store)

    counts = await store.forget_user("u1", agent_id=None, at=at(300))

    assert [(c.agent_id, c.facts) for c in counts] == [("a1", 2), ("a2", 1)]
    assert await store.list_facts(user_filter("a2"), include_invalid=True) == []
    assert await store.get_session("s2") is None
    assert [f.fact_id for f in await store.list_facts(user_filter(user_id="u2"))] == ["f2", "f4"]
    # The all-agents tombstone counts for agents the user never met too.
    assert await store.erasure_epochs("a9", ["u1"]) == {"u1": 1}
    assert await store.erasure_epochs("a1", ["u1"]) == {"u1": 2}
    # A second forget finds nothing left, and says so.
    again = await store.forget_user("u1", agent_id="a1", at=at(400))
    assert [(c.facts, c.messages, c.sessions) for c in again] == [(0, 0, 0)]


async def test_a_formation_committed_after_the_forget_writes_nothing_of_the_user(
    store: MemoryStore,
) -> None:
    # A group chat (the session stays) and a one-user session (it goes whole).
    await record(
        store, "g", "a1",
        [msg("g-1", "I love sailing", seconds=1), msg("g-2", "me too", user_id="u2", seconds=2)],
    )  # fmt: skip
    await record(store, "solo", "a1", [msg("solo-1", "I love sailing", seconds=1)])
    epochs = await store.erasure_epochs("a1", ["u1", "u2"])
    assert epochs == {"u1": 0, "u2": 0}
    in_group = commit(
        session_id="g", new_cursor=2, ops=[add("n1", "Loves sailing", unit(1))],
        reflections=[reflection(USER_KEY, 7, "u1 sails", session_id="g")],
    ).model_copy(update={"user_epochs": epochs})  # fmt: skip
    alone = commit(session_id="solo", ops=[add("n2", "Loves sailing", unit(1))]).model_copy(
        update={"user_epochs": {"u1": 0}}
    )

    await store.forget_user("u1", agent_id="a1", at=at(50))
    group_result = await store.commit_formation(in_group)
    solo_result = await store.commit_formation(alone)

    assert group_result.discarded_for_erasure and solo_result.discarded_for_erasure
    assert (group_result.facts_added, group_result.reflections_added) == (0, 0)
    assert await store.get_facts(["n1", "n2"]) == []
    assert await store.list_reflections(USER_KEY, include_absorbed=True) == []
    # Not even the group chat's cursor moved: u2's message is still to be formed, by a window
    # loaded again, which carries the new epochs and commits.
    state = await store.get_session_agent_state("g", "a1")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (0, 1)
    again = commit(
        session_id="g", new_cursor=2, ops=[add("n4", "Likes sailing too", unit(0, 1), user_id="u2")]
    ).model_copy(update={"user_epochs": await store.erasure_epochs("a1", ["u2"])})
    assert (await store.commit_formation(again)).facts_added == 1
    state = await store.get_session_agent_state("g", "a1")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (2, 0)

    # The user comes back: windows loaded now carry the new epoch and form as usual.
    await record(store, "back", "a1", [msg("back-1", "I moved to Oslo", seconds=60)])
    back = commit(session_id="back", ops=[add("n3", "Lives in Oslo", unit(0, 1))])
    back = back.model_copy(update={"user_epochs": await store.erasure_epochs("a1", ["u1"])})
    result = await store.commit_formation(back)
    assert not result.discarded_for_erasure and result.facts_added == 1


async def test_a_consolidation_drafted_before_the_forget_cannot_commit(store: MemoryStore) -> None:
    former = await Former(store).start(1)
    buffered = [reflection(USER_KEY, i, f"u1 fact {i}") for i in range(2)]
    await former.form(reflections=buffered)
    drafted_from = [r.reflection_id for r in await store.unabsorbed_reflections(USER_KEY)]
    assert len(drafted_from) == 2

    await store.forget_user("u1", agent_id="a1", at=at(300))

    with pytest.raises(ConflictError):
        await store.commit_consolidation(
            USER_KEY, expected_version=0, content="u1: …", word_limit=100,
            absorbed_ids=drafted_from, at=at(301),
        )  # fmt: skip
    assert await store.get_consolidated(USER_KEY) is None


async def test_forget_takes_the_agents_session_memory_of_a_session_another_agent_shares(
    store: MemoryStore,
) -> None:
    """u1 alone with a1 and a2 in s5: forgetting u1 for a1 leaves the session (a2's) but not
    a1's session memory of it, which only u1's words formed."""
    await record(store, "s5", "a1", [msg("s5-1", "my PIN is 4711", seconds=1)])
    await record(store, "s5", "a2", [msg("s5-2", "hello", seconds=2)])
    mine, theirs = ScopeKey.session("a1", "s5"), ScopeKey.session("a2", "s5")
    for agent, key, joined_at in (("a1", mine, 0), ("a2", theirs, 1)):
        former = Former(store, "s5", agent)
        former.cursor = joined_at  # a late agent forms what is said after it joined
        formed = await former.form(
            reflections=[reflection(key, 0, "u1 told a PIN", session_id="s5")]
        )
        assert formed.reflections_added == 1

    await store.forget_user("u1", agent_id="a1", at=at(100))

    assert await store.list_reflections(mine, include_absorbed=True) == []
    assert [r.content for r in await store.list_reflections(theirs)] == ["u1 told a PIN"]
    assert await store.get_session("s5") is not None


async def test_a_session_id_used_again_after_the_forget_is_formed(store: MemoryStore) -> None:
    """forget_user deleted s1 whole; the backend used the id again, its seqs from 1 again: the
    first window's formation id used to find the old commit's record and be taken as done."""
    await record(store, "s1", "a1", [msg("s1-1", "I love sailing", seconds=1)])
    await store.commit_formation(commit(ops=[add("f1", "Loves sailing", unit(1))]))
    await store.forget_user("u1", agent_id="a1", at=at(50))

    await record(store, "s1", "a1", [msg("s1-1b", "I moved to Oslo", seconds=60)])
    again = commit(ops=[add("f2", "Lives in Oslo", unit(0, 1))], seconds=120)
    again = again.model_copy(update={"user_epochs": await store.erasure_epochs("a1", ["u1"])})
    result = await store.commit_formation(again)

    assert (result.already_committed, result.facts_added) == (False, 1)
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None and state.cursor_seq == 1
