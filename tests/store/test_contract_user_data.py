"""Contract: what forget_user erases and a user's export holds reach every message carrying the
user's id, whatever its role (a message takes a user_id with any role; only role "user" makes a
participant), and no other user's words; forget leaves no side vector of an erased fact."""

from __future__ import annotations

from functools import partial

import pytest

from memory.models import ConsolidatedMemory, MessageIn, ScopeKey, StoredMessage
from memory.store.base import MemoryStore
from memory.store.mongo import MongoStore
from memory.store.sql.db import Db
from memory.store.sql.store import SqlStore
from tests.store.builders import Former, add, at, record, reflection, unit, vec

NEW = "new-model"


def msg(
    message_id: str, content: str, *, role: str = "user", user_id: str | None, seconds: float
) -> MessageIn:
    """A message as recorded, its user id kept whatever its role (builders.msg keeps it for role
    user only)."""
    return MessageIn.model_validate(
        {
            "message_id": message_id, "role": role, "content": content,
            "created_at": at(seconds), "user_id": user_id,
        }
    )  # fmt: skip


async def _sessions(store: MemoryStore) -> None:
    """s1 (a1): u2 speaks, u1's words come relayed (role other). s2 (a1): u1 alone, as a tool's
    output, and the agent's answer. s4 (a1): u1 speaks, u2's words come as a tool's output.
    s3 (a2): u1 alone, as a tool's output."""
    await record(store, "s1", "a1", [
        msg("x1", "hi from u2", user_id="u2", seconds=1),
        msg("x2", "u1: my PIN is 9911", role="other", user_id="u1", seconds=2),
    ])  # fmt: skip
    await record(store, "s2", "a1", [
        msg("y1", "u1 form: SSN 123-45-6789", role="tool", user_id="u1", seconds=1),
        msg("y2", "Thanks, noted", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "s4", "a1", [
        msg("z1", "hi from u1", user_id="u1", seconds=1),
        msg("z2", "u2 form: allergic to nuts", role="tool", user_id="u2", seconds=2),
    ])  # fmt: skip
    await record(store, "s3", "a2", [
        msg("w1", "u1 form for a2", role="tool", user_id="u1", seconds=1),
    ])  # fmt: skip


async def _said(store: MemoryStore, session_id: str) -> list[tuple[str | None, str]]:
    return [(m.user_id, m.message_id) for m in await store.load_messages(session_id, 0, 100)]


async def test_forget_erases_the_users_messages_whatever_their_role(store: MemoryStore) -> None:
    await _sessions(store)

    [counts] = await store.forget_user("u1", agent_id="a1", at=at(100))

    # s2 had no other user: it goes whole (2 messages); in s1 and s4 only u1's message goes.
    assert (counts.sessions, counts.messages) == (1, 2 + 1 + 1)
    assert await _said(store, "s1") == [("u2", "x1")]
    assert await store.get_session("s2") is None
    # u2's words in s4 are u2's, though u2 is not a participant there: they stay.
    assert await _said(store, "s4") == [("u2", "z2")]
    assert await _said(store, "s3") == [("u1", "w1")]  # another agent's, with --agent
    # Who takes part in the group chat is unchanged; what a1 has to form is what is left.
    s1 = await store.get_session("s1", "a1")
    assert s1 is not None and s1.user_ids == ("u2",)
    state = await store.get_session_agent_state("s1", "a1")
    assert state is not None and state.pending_messages == 1


async def test_forget_of_every_agent_finds_the_agents_through_the_messages(
    store: MemoryStore,
) -> None:
    await _sessions(store)

    counts = await store.forget_user("u1", agent_id=None, at=at(100))

    assert [(c.agent_id, c.sessions, c.messages) for c in counts] == [("a1", 1, 4), ("a2", 1, 1)]
    assert await store.get_session("s3") is None
    assert await _said(store, "s1") == [("u2", "x1")]
    assert await _said(store, "s4") == [("u2", "z2")]


async def test_a_users_export_holds_their_messages_and_no_other_users(store: MemoryStore) -> None:
    await record(store, "g1", "a1", [
        msg("g1-1", "u1: hello", user_id="u1", seconds=1),
        msg("g1-2", "u2: my divorce papers came today", user_id="u2", seconds=2),
        msg("g1-3", "Sorry to hear about the divorce", role="agent", user_id=None, seconds=3),
    ])  # fmt: skip
    await record(store, "s2", "a1", [
        msg("s2-1", "u1 form: SSN 123-45-6789", role="tool", user_id="u1", seconds=1),
        msg("s2-2", "Thanks, noted", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "s6", "a2", [
        msg("s6-1", "u1 to a2", user_id="u1", seconds=1),
        msg("s6-2", "a2 answers", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip

    async def exported(agent_id: str | None, user_id: str | None) -> list[str]:
        data = await store.export_data(agent_id=agent_id, user_id=user_id, messages=True)
        return [m.message_id for m in data.messages]

    # u1's own, and the agent's answers only where u1 was the only user: the reply in the group
    # chat may repeat u2's words.
    assert await exported("a1", "u1") == ["g1-1", "s2-1", "s2-2"]
    assert await exported(None, "u1") == ["g1-1", "s2-1", "s2-2", "s6-1", "s6-2"]
    assert await exported("a1", "u2") == ["g1-2"]
    assert await exported("a1", None) == ["g1-1", "g1-2", "g1-3", "s2-1", "s2-2"]


async def test_one_agents_export_holds_only_the_messages_that_agent_recorded(
    store: MemoryStore,
) -> None:
    """Alice told bob about her diagnosis in "desk"; eve joined the session later. Eve's export
    of alice holds what eve recorded, not bob's records (alice's words to bob, bob's replies);
    an export for every agent holds all. A message without its recorder (an older row) is the
    agent's only in a session where that agent is the only one."""
    await record(store, "desk", "bob", [
        msg("d1", "I was diagnosed with diabetes", user_id="alice", seconds=1),
        msg("d2", "Your insulin dose stays at 12 units", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "desk", "eve", [
        msg("d3", "Hello Eve, what is the weather?", user_id="alice", seconds=3),
        msg("d4", "Sunny", role="agent", user_id=None, seconds=4),
    ])  # fmt: skip
    await record(store, "solo", "eve", [msg("s1", "hi eve", user_id="alice", seconds=1)])

    def unattributed(session_id: str, seq: int, message_id: str) -> StoredMessage:
        return StoredMessage(
            session_id=session_id, seq=seq, message_id=message_id, role="user",
            content=f"old words {message_id}", created_at=at(seq + 10), user_id="alice",
        )  # fmt: skip

    # An import takes a session whole: the stored messages, and one without its recorder.
    for sid, seq, mid in (("desk", 5, "d5"), ("solo", 2, "s2")):
        stored = await store.load_messages(sid, 0, 100)
        counts = await store.import_messages([*stored, unattributed(sid, seq, mid)])
        assert counts.inserted == 1, counts

    async def exported(agent_id: str | None) -> list[str]:
        data = await store.export_data(agent_id=agent_id, user_id="alice", messages=True)
        return [m.message_id for m in data.messages]

    # Alice is desk's only user: each agent's replies there are in its export of her.
    assert await exported("eve") == ["d3", "d4", "s1", "s2"]
    assert await exported("bob") == ["d1", "d2"]
    assert await exported(None) == ["d1", "d2", "d3", "d4", "d5", "s1", "s2"]


async def test_a_users_export_holds_the_session_memory_forget_would_erase(
    store: MemoryStore,
) -> None:
    """Alice alone in s1, with Bob in s2, Bob alone in s3, alone with a1 and a2 in s4: her export
    holds s1's session reflection and blob (forget_user deletes s1 whole, its session memory with
    it), not s2's, which forget keeps for Bob, nor s3's; of s4, the memory of the agents exported
    (forget of a1 keeps a2's)."""
    await record(store, "s1", "a1", [msg("s1-1", "alice@example.com", user_id="alice", seconds=1)])
    await record(store, "s2", "a1", [
        msg("s2-1", "hi from alice", user_id="alice", seconds=1),
        msg("s2-2", "hi from bob", user_id="bob", seconds=2),
    ])  # fmt: skip
    await record(store, "s3", "a1", [msg("s3-1", "bob alone", user_id="bob", seconds=1)])
    await record(store, "s4", "a1", [msg("s4-1", "hi a1", user_id="alice", seconds=1)])
    await record(store, "s4", "a2", [msg("s4-2", "hi a2", user_id="alice", seconds=2)])
    keys = {s: ScopeKey.session("a1", s) for s in ("s1", "s2", "s3")}
    await store.import_reflections(
        [reflection(key, 0, f"{s} reflection", session_id=s) for s, key in keys.items()]
        + [reflection(ScopeKey.user("a1", "alice"), 0, "Alice's own", session_id="s2")]
        + [
            reflection(ScopeKey.session(a, "s4"), 0, f"{a} s4", session_id="s4")
            for a in ("a1", "a2")
        ]
    )
    s1_blob = ConsolidatedMemory(
        scope_key=keys["s1"], content="Alice's email is alice@example.com", version=1,
        word_limit=50, updated_at=at(5),
    )  # fmt: skip
    await store.import_consolidated([s1_blob])

    async def exported(agent_id: str | None, user_id: str | None) -> tuple[list[str], list[str]]:
        data = await store.export_data(agent_id=agent_id, user_id=user_id, messages=False)
        return (
            sorted(r.scope_key.key for r in data.reflections),
            [b.scope_key.key for b in data.consolidated],
        )

    alice = (["session:a1:s1", "session:a1:s4", "user:a1:alice"], ["session:a1:s1"])
    assert await exported("a1", "alice") == alice
    assert await exported(None, "alice") == (sorted([*alice[0], "session:a2:s4"]), alice[1])
    assert await exported("a2", "alice") == (["session:a2:s4"], [])
    assert await exported("a1", "bob") == (["session:a1:s3"], [])
    everything = sorted([*alice[0], "session:a1:s2", "session:a1:s3", "session:a2:s4"])
    assert await exported(None, None) == (everything, alice[1])
    with_messages = await store.export_data(agent_id="a1", user_id="alice", messages=True)
    assert sorted(r.scope_key.key for r in with_messages.reflections) == alice[0]
    # The export held exactly what forgetting her erases.
    await store.forget_user("alice", agent_id="a1", at=at(100))
    kept = sorted(set(everything) - set(alice[0]))
    assert await exported(None, None) == (kept, [])


async def _forget_participants(store: MemoryStore, session_id: str) -> None:
    """The session as a store written before every role made a participant keeps it: no
    participant recorded (session_users rows, user_ids), its user ids on its messages only."""
    if isinstance(store, MongoStore):
        await store._db.sessions.update_one({"_id": session_id}, {"$set": {"user_ids": []}})
        await store._db.session_agents.update_many(
            {"session_id": session_id}, {"$set": {"user_ids": []}}
        )
        return
    assert isinstance(store, SqlStore)
    for table in ("session_users", "session_agent_users"):
        sql = f"DELETE FROM {table} WHERE session_id = %s"
        await store._db_write(partial(_execute, sql=sql, params=(session_id,)))


async def _execute(db: Db, *, sql: str, params: tuple[str, ...]) -> None:
    await db.execute(sql, params)


async def test_an_export_reads_sessions_without_participants_from_their_messages(
    store: MemoryStore,
) -> None:
    """Sessions with no participant recorded: "old" (u1's id on a tool message only, stored
    before that made u1 a participant) is u1's, whom its messages name alone; "quiet" (no user
    id at all: the agent's notes, a guest) is no user's. Every backend decides alike."""
    await record(store, "old", "a1", [
        msg("o1", "u1 form: blood type 0+", role="tool", user_id="u1", seconds=1),
        msg("o2", "Noted", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "quiet", "a1", [
        msg("q1", "a guest says hi", user_id=None, seconds=1),
        msg("q2", "hello guest", role="agent", user_id=None, seconds=2),
    ])  # fmt: skip
    await record(store, "g", "a1", [msg("g1", "u2 here", user_id="u2", seconds=1)])
    for sid in ("old", "quiet"):
        await _forget_participants(store, sid)
        session = await store.get_session(sid)
        assert session is not None and session.user_ids == ()
    await store.import_reflections(
        [
            reflection(ScopeKey.session("a1", s), 0, f"{s} memory", session_id=s)
            for s in ("old", "quiet", "g")
        ]
    )

    async def exported(agent_id: str | None, user_id: str | None) -> tuple[list[str], list[str]]:
        data = await store.export_data(agent_id=agent_id, user_id=user_id, messages=True)
        return (
            [m.message_id for m in data.messages],
            sorted(r.scope_key.session_id or "" for r in data.reflections),
        )

    for agent_id in ("a1", None):
        assert await exported(agent_id, "u1") == (["o1", "o2"], ["old"])
        assert await exported(agent_id, "u2") == (["g1"], ["g"])
        everything = (["g1", "o1", "o2", "q1", "q2"], ["g", "old", "quiet"])
        assert await exported(agent_id, None) == everything
    assert await exported("a2", "u1") == ([], [])


async def _side_vectors(store: MemoryStore) -> set[str]:
    """The facts with a re-embedding side vector, from the backend's own tables (no store call
    lists them)."""
    if isinstance(store, MongoStore):
        return set(await store._db.fact_reembed.distinct("_id"))
    assert isinstance(store, SqlStore)
    return set(await store._db_read(lambda db: db.column("SELECT fact_id FROM fact_reembed")))


@pytest.mark.parametrize("agent_id", ["a1", None])
async def test_forget_deletes_the_side_vectors_of_the_erased_facts(
    store: MemoryStore, agent_id: str | None
) -> None:
    former = await Former(store).start(2)
    await former.form(add("f1", "Has epilepsy", unit(1, 0)))
    await former.form(add("f2", "Answers in French", unit(0, 1), scope="agent"))
    items = await store.reembed_pending(NEW, 4, limit=10)
    await store.put_reembedded(NEW, 4, [(item, vec(0, 1)) for item in items])
    assert await _side_vectors(store) == {"f1", "f2"}

    await store.forget_user("u1", agent_id=agent_id, at=at(500))

    assert await _side_vectors(store) == {"f2"}
