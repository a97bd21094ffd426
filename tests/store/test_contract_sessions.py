"""Contract: agents, sessions, messages, cold sessions and the embeddings cache (both backends)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import pytest

from memory.errors import ConflictError, InvalidInputError
from memory.models import AgentConfig
from memory.store.base import MemoryStore
from memory.store.mongo.reads import MongoReads
from memory.store.sql.reads import SqlReads
from memory.store.sqlite import SQLiteStore
from tests.store.builders import (
    CHARS_PER_TOKEN,
    WEIGHTS,
    at,
    commit,
    msg,
    record,
    session_with_messages,
    vec,
)

AgentsRead = Callable[[Any, Sequence[str] | None], Awaitable[list[AgentConfig]]]

# ---------------------------------------------------------------- agents


async def test_agent_upsert_and_get(store: MemoryStore) -> None:
    assert await store.get_agent("a1") is None
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada", persona="helpful"))
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada 2", tier=1))

    agent = await store.get_agent("a1")
    assert agent == AgentConfig(agent_id="a1", name="Ada 2", tier=1)


async def test_agent_update_sets_the_fields_given_and_keeps_the_others(store: MemoryStore) -> None:
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada", persona="helpful", tier=1))
    updated = await store.update_agent("a1", {"user_memory_enabled": False, "persona": "terse"})
    expected = AgentConfig(
        agent_id="a1", name="Ada", persona="terse", tier=1, user_memory_enabled=False
    )
    assert updated == expected and await store.get_agent("a1") == expected
    assert await store.update_agent("a1", {}) == expected

    assert await store.update_agent("nobody", {"name": "Nobody"}) is None
    assert await store.get_agent("nobody") is None  # an update registers no agent
    for refused, field in (
        ({"tier": 99}, "tier"),
        ({"agent_id": "a2"}, "agent_id"),
        ({"surprise": 1}, "surprise"),
        ({"name": "Ada 3", "user_memory_enabled": "no"}, "user_memory_enabled"),
    ):
        with pytest.raises(InvalidInputError, match=field):
            await store.update_agent("a1", refused)
    assert await store.get_agent("a1") == expected  # nothing written, not even the valid name
    assert await store.get_agent("a2") is None


async def test_agent_updates_of_different_fields_at_once_all_hold(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each update sets its fields on the configuration its own transaction reads: none writes
    back a field another one changed meanwhile (user memory turned off stays off). Forced where
    transactions run at once (PostgreSQL, MongoDB): the first updates' reads of the agent, inside
    their transactions, wait until three have read (the test pool's connections: four). SQLite's
    one writer runs them in turn."""
    await store.upsert_agent(AgentConfig(agent_id="a1", name="Ada"))
    changes: list[dict[str, object]] = [
        {"user_memory_enabled": False},
        {"persona": "careful"},
        {"name": "Ada 2"},
        {"memory_instructions": "remember dates"},
        {"agent_memory_enabled": False},
        {"tier": 2},
    ]
    reads: list[object] = []
    all_read = asyncio.Event()

    def held(read: AgentsRead) -> AgentsRead:
        async def agents(self: object, agent_ids: Sequence[str] | None) -> list[AgentConfig]:
            got = await read(self, agent_ids)
            reads.append(agent_ids)
            if len(reads) == 3:
                all_read.set()
            await asyncio.wait_for(all_read.wait(), 10)  # a retry reads on: already set
            return got

        return agents

    if not isinstance(store, SQLiteStore):
        for reads_class in (SqlReads, MongoReads):
            monkeypatch.setattr(reads_class, "agents", held(reads_class.agents))
    await asyncio.gather(*(store.update_agent("a1", change) for change in changes))
    assert isinstance(store, SQLiteStore) or len(reads) >= len(changes)  # the reads held
    merged: dict[str, object] = {"agent_id": "a1"}
    for change in changes:
        merged |= change
    assert await store.get_agent("a1") == AgentConfig.model_validate(merged)


# ---------------------------------------------------------------- recording


async def test_record_messages_assigns_seqs_in_order(store: MemoryStore) -> None:
    outcome = await store.record_messages(
        "s1",
        "a1",
        [msg("m1", "first"), msg("m2", "second", role="agent"), msg("m3", "third")],
        weights=WEIGHTS,
        chars_per_token=CHARS_PER_TOKEN,
        now=at(0),
    )

    assert (outcome.inserted, outcome.duplicates) == (3, 0)
    assert outcome.state.last_seq == 3
    assert outcome.state.cursor_seq == 0
    stored = await store.load_messages("s1", 0, 10)
    assert [(m.seq, m.message_id, m.content) for m in stored] == [
        (1, "m1", "first"),
        (2, "m2", "second"),
        (3, "m3", "third"),
    ]


async def test_record_messages_is_idempotent_by_message_id(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "one"), msg("m2", "two")])
    outcome = await store.record_messages(
        "s1",
        "a1",
        [msg("m1", "one"), msg("m2", "two"), msg("m3", "three")],
        weights=WEIGHTS,
        chars_per_token=CHARS_PER_TOKEN,
        now=at(1),
    )

    assert (outcome.inserted, outcome.duplicates) == (1, 2)
    assert outcome.state.last_seq == 3
    assert outcome.state.pending_messages == 3
    stored = await store.load_messages("s1", 0, 10)
    assert [(m.seq, m.message_id) for m in stored] == [(1, "m1"), (2, "m2"), (3, "m3")]


async def test_a_stored_message_id_with_another_content_is_refused_and_nothing_written(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("m1", "one")])
    with pytest.raises(ConflictError, match="'m1'"):
        await record(store, "s1", "a1", [msg("m2", "two"), msg("m1", "one, edited")])

    stored = await store.load_messages("s1", 0, 10)
    assert [(m.message_id, m.content) for m in stored] == [("m1", "one")]


async def test_a_stored_message_id_said_by_another_speaker_is_refused(store: MemoryStore) -> None:
    """Words "ok" from carol under id f1, then from dan or from the agent under f1 (ids numbered
    per user): dan's words are not dropped as a duplicate of carol's."""
    await record(store, "s1", "a1", [msg("f1", "ok", user_id="carol")])
    for other in (msg("f1", "ok", user_id="dan"), msg("f1", "ok", role="agent")):
        with pytest.raises(ConflictError, match="another content, role or user id"):
            await record(store, "s1", "a1", [other])
    await record(store, "s1", "a1", [msg("f1", "ok", user_id="carol")])  # a retry

    stored = await store.load_messages("s1", 0, 10)
    assert [(m.message_id, m.role, m.user_id) for m in stored] == [("f1", "user", "carol")]


async def test_an_empty_batch_is_refused_and_takes_no_session(store: MemoryStore) -> None:
    """As over HTTP (422), every door: no session created for a batch with nothing in it, and
    no agent joined to one, so the id stays free for the agent that records into it first."""
    with pytest.raises(InvalidInputError, match="no messages"):
        await record(store, "e1", "a1", [])
    assert await store.get_session("e1") is None
    assert await store.get_session_agent_state("e1", "a1") is None
    # The session is a2's when a2 records first (a key for a2 alone may join it).
    joined = await store.record_messages(
        "e1", "a2", [msg("m1")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN, now=at(1),
        may_join={"a2"},
    )  # fmt: skip
    assert joined.inserted == 1

    with pytest.raises(InvalidInputError, match="no messages"):
        await record(store, "e1", "a1", [])
    session = await store.get_session("e1")
    assert session is not None and session.agent_ids == ("a2",)


async def test_pending_counters_weigh_tokens_by_role(store: MemoryStore) -> None:
    outcome = await store.record_messages(
        "s1",
        "a1",
        [
            msg("m1", "x" * 10, role="user"),  # ceil(10 / 4) = 3 tokens x 1.0
            msg("m2", "x" * 8, role="agent"),  # 2 tokens x 0.5
            msg("m3", "x", role="tool"),  # 1 token x 0.25
        ],
        weights=WEIGHTS,
        chars_per_token=CHARS_PER_TOKEN,
        now=at(0),
    )

    assert outcome.state.pending_messages == 3
    assert outcome.state.pending_weighted_tokens == pytest.approx(4.25)
    state = await store.get_session_agent_state("s1", "a1")
    assert state == outcome.state


async def test_last_message_at_is_the_latest_created_at(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", seconds=50), msg("m2", seconds=30)])
    await record(store, "s1", "a1", [msg("m3", seconds=40)])

    state = await store.get_session_agent_state("s1", "a1")
    session = await store.get_session("s1")
    assert state is not None and session is not None
    assert state.last_message_at == at(50)
    assert session.last_message_at == at(50)


async def test_every_agent_of_the_session_gets_the_new_messages(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "x" * 4)])
    joined = await store.record_messages(
        "s1",
        "a2",
        [msg("m2", "x" * 8)],
        weights=WEIGHTS,
        chars_per_token=CHARS_PER_TOKEN,
        now=at(1),
    )

    # The newcomer joins at the head: it forms memory of what is said from then on only (#11).
    assert joined.state.cursor_seq == 1
    assert joined.state.pending_messages == 1
    assert joined.state.pending_weighted_tokens == pytest.approx(2.0)
    first = await store.get_session_agent_state("s1", "a1")
    assert first is not None
    assert first.pending_messages == 2
    assert first.pending_weighted_tokens == pytest.approx(3.0)


async def test_agent_joining_with_only_known_messages_has_nothing_pending(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("m1"), msg("m2")])
    outcome = await store.record_messages(
        "s1", "a2", [msg("m2")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN, now=at(1)
    )

    assert (outcome.inserted, outcome.duplicates) == (0, 1)
    assert outcome.state.agent_id == "a2"
    assert outcome.state.pending_messages == 0
    assert (outcome.state.cursor_seq, outcome.state.last_seq) == (2, 2)
    session = await store.get_session("s1")
    assert session is not None
    assert set(session.agent_ids) == {"a1", "a2"}


async def test_session_info_lists_users_and_group_sessions(store: MemoryStore) -> None:
    assert await store.get_session("s1") is None
    first = [msg("m1", user_id="u1"), msg("m2", role="agent")]
    await record(store, "s1", "a1", first, now_seconds=5)
    solo = await store.get_session("s1")
    assert solo is not None
    assert solo.user_ids == ("u1",)
    assert solo.agent_ids == ("a1",)
    assert solo.created_at == at(5)
    assert solo.ended_at is None
    assert not solo.is_group

    await record(store, "s1", "a1", [msg("m3", user_id="u2"), msg("m4", user_id="u1")])
    group = await store.get_session("s1")
    assert group is not None
    assert set(group.user_ids) == {"u1", "u2"}
    assert group.is_group


async def test_a_guest_beside_a_user_makes_a_group_in_every_view(store: MemoryStore) -> None:
    """A user message without a user id is a guest's (a visitor of a public chat): nobody's
    participant, but a second person reading the answers. Beside a user the session is a group
    chat, for every agent of it, the one the guest spoke to or not (002 rule 3); a guest alone
    changes nothing, and other roles without a user id are no guests."""
    await record(store, "s1", "a1", [msg("m1", user_id="u1"), msg("m2", role="agent")])
    await record(store, "s1", "a2", [msg("m3", role="tool"), msg("m4", role="system")])
    for view in (await store.get_session("s1"), await store.get_session("s1", "a1")):
        assert view is not None and not view.has_guests and not view.is_group

    await record(store, "s1", "a2", [msg("m5", user_id=None)])  # a guest, to a2
    whole, a1, a2 = [await store.get_session("s1", a) for a in (None, "a1", "a2")]
    assert whole is not None and a1 is not None and a2 is not None
    assert (whole.user_ids, a1.user_ids, a2.user_ids) == (("u1",), ("u1",), ())
    assert whole.has_guests and a1.has_guests and a2.has_guests
    assert whole.is_group and a1.is_group and a2.is_group
    await record(store, "s1", "a1", [msg("m5", user_id=None), msg("m6", user_id="u1")])
    again = await store.get_session("s1", "a1")
    assert again is not None and again.has_guests and again.is_group  # it stays one

    await record(store, "lobby", "a1", [msg("g1", user_id=None), msg("g2", role="agent")])
    for view in (await store.get_session("lobby"), await store.get_session("lobby", "a1")):
        assert view is not None and view.has_guests and view.user_ids == ()
        assert not view.is_group


async def test_load_messages_returns_the_half_open_range(store: MemoryStore) -> None:
    await record(
        store,
        "s1",
        "a1",
        [
            msg("m1", "hi", user_id="u1", seconds=1),
            msg("m2", "hello", role="agent", seconds=2),
            msg("m3", "bye", user_id="u1", seconds=3),
        ],
    )
    await record(store, "s2", "a1", [msg("other")])

    middle = await store.load_messages("s1", 1, 2)
    assert len(middle) == 1
    only = middle[0]
    assert (only.session_id, only.seq, only.message_id, only.role) == ("s1", 2, "m2", "agent")
    assert (only.content, only.created_at, only.agent_id) == ("hello", at(2), "a1")
    assert [m.seq for m in await store.load_messages("s1", 1, 3)] == [2, 3]
    assert (await store.load_messages("s1", 0, 1))[0].user_id == "u1"
    assert await store.load_messages("s1", 3, 10) == []
    assert await store.get_session_agent_state("s1", "nobody") is None


# ---------------------------------------------------------------- cold sessions


async def test_cold_sessions_are_ordered_and_cut_at_idle_before(store: MemoryStore) -> None:
    await record(store, "s-late", "a1", [msg("m1", seconds=30)])
    await record(store, "s-early", "a1", [msg("m1", seconds=10)])
    # a1 said m0 before a2 joined: m1 is pending for both agents, both last at 20 s.
    await record(store, "s-mid", "a1", [msg("m0", seconds=20)])
    await record(store, "s-mid", "a2", [msg("m1", seconds=20)])

    cold = await store.list_cold_sessions(
        idle_before=at(20), min_messages=1, min_weighted_tokens=0, after=None, limit=10
    )

    assert [(s.session_id, s.agent_id) for s in cold] == [
        ("s-early", "a1"),
        ("s-mid", "a1"),
        ("s-mid", "a2"),
    ]
    assert cold[0].last_message_at == at(10)
    assert cold[0].pending_messages == 1


async def test_cold_sessions_page_strictly_after_the_last_key(store: MemoryStore) -> None:
    for i, session_id in enumerate(["s1", "s2", "s3"]):
        await record(store, session_id, "a1", [msg("m1", seconds=10 + i)])

    first = await store.list_cold_sessions(
        idle_before=at(100), min_messages=1, min_weighted_tokens=0, after=None, limit=2
    )
    last = first[-1]
    assert last.last_message_at is not None
    rest = await store.list_cold_sessions(
        idle_before=at(100),
        min_messages=1,
        min_weighted_tokens=0,
        after=(last.last_message_at, last.session_id, last.agent_id),
        limit=2,
    )

    assert [s.session_id for s in first] == ["s1", "s2"]
    assert [s.session_id for s in rest] == ["s3"]


async def test_cold_sessions_need_enough_messages_or_tokens(store: MemoryStore) -> None:
    await record(store, "s-short", "a1", [msg("m1", "x" * 4, seconds=1)])  # 1 message, 1 token
    await record(store, "s-many", "a1", [msg("m1", "x", seconds=2), msg("m2", "x", seconds=2)])
    await record(store, "s-long", "a1", [msg("m1", "x" * 40, seconds=3)])  # 10 tokens
    await session_with_messages(store, "s-formed", "a1", count=2)
    await store.commit_formation(commit(session_id="s-formed", expected_cursor=0, new_cursor=2))

    cold = await store.list_cold_sessions(
        idle_before=at(100), min_messages=2, min_weighted_tokens=10, after=None, limit=10
    )

    assert [s.session_id for s in cold] == ["s-many", "s-long"]
    # pending_messages >= 1 always applies, even with no threshold at all.
    everything = await store.list_cold_sessions(
        idle_before=at(100), min_messages=0, min_weighted_tokens=0, after=None, limit=10
    )
    assert "s-formed" not in {s.session_id for s in everything}


async def test_a_session_quiet_since_the_rest_cut_is_cold_however_little_is_left(
    store: MemoryStore,
) -> None:
    """Below both thresholds, a session's last turns (a correction, one exchange never ended)
    are cold once quiet since ``rest_before``: they used to stay unformed for good."""
    await record(store, "s-rested", "a1", [msg("m1", "x", seconds=1)])
    await record(store, "s-recent", "a1", [msg("m1", "x", seconds=50)])

    cold = await store.list_cold_sessions(
        idle_before=at(100), min_messages=2, min_weighted_tokens=10, after=None, limit=10,
        rest_before=at(10),
    )  # fmt: skip
    without = await store.list_cold_sessions(
        idle_before=at(100), min_messages=2, min_weighted_tokens=10, after=None, limit=10
    )

    assert [s.session_id for s in cold] == ["s-rested"]
    assert without == []


async def test_ended_sessions_are_still_cold(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", seconds=1)])
    await store.end_session("s1", "a1", at(2))

    cold = await store.list_cold_sessions(
        idle_before=at(100), min_messages=1, min_weighted_tokens=0, after=None, limit=10
    )

    assert [s.session_id for s in cold] == ["s1"]
    session = await store.get_session("s1", "a1")
    assert session is not None and session.ended_at == at(2)


# ---------------------------------------------------------------- embeddings cache


async def test_embeddings_cache_round_trip_per_model(store: MemoryStore) -> None:
    await store.put_embeddings("model-a", {"h1": vec(1, 0), "h2": vec(0, 1)})
    await store.put_embeddings("model-a", {"h1": vec(0, 0, 1)})  # upsert
    await store.put_embeddings("model-b", {"h1": vec(0, 0, 0, 1)})

    found = await store.get_embeddings("model-a", ["h1", "h2", "h3"])

    assert set(found) == {"h1", "h2"}
    assert found["h1"].dtype == np.float32
    np.testing.assert_array_equal(found["h1"], vec(0, 0, 1))
    np.testing.assert_array_equal(found["h2"], vec(0, 1))
    other = await store.get_embeddings("model-b", ["h1", "h2"])
    np.testing.assert_array_equal(other["h1"], vec(0, 0, 0, 1))
    assert set(other) == {"h1"}
    assert await store.get_embeddings("model-c", ["h1"]) == {}
