"""Contract: a store in which a forget under one agent ran before be4b748 is repaired when it
opens (rules.repair_parted). That forget, of a user alone in a session that stayed for another
agent, took the user out of the session's users: the other agent's answer quoting the user
stayed beyond every later forget and export of the user (h229 D1, h234 D2). Opened, the store
puts the user back as today's forget leaves them, and leaves every other session as it is; or,
where a forget of the user that ran after the old one (and found no session) would have taken
the session whole, and every message of it is older than that forget, takes it whole."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memory.lifecycle.exporting import export_store
from memory.models import ScopeKey, StoredMessage
from memory.store.base import MemoryStore
from memory.store.counts import Erasure
from memory.store.rules import erasure
from memory.store.rules.erasure import ForgetRequest, UserSession
from memory.store.rules.lifecycle_writes import DeleteUserMessages, SetWithheld
from memory.store.rules.withheld import kept_for_others, pending_of, withhold
from memory.store.rules.writes import MoveCursor, Write
from tests.store.builders import at, msg, record, reflection
from tests.store.builders import commit as formation
from tests.store.conftest import opened_store

HIV = "I was diagnosed with HIV last week"
ANSWER = "I'm sorry you were diagnosed with HIV last week"


def _before_be4b748(req: ForgetRequest, s: UserSession, *, parted: bool) -> tuple[int, list[Write]]:
    """rules.erasure._user_messages as it was before be4b748 (its text, but the docstring): with
    no message of the user kept for another agent, the user left the session's users, and the
    forgetting agent took no bound."""
    user_id, agent_id = req.user_id, req.agent_id
    kept = (
        ()
        if req.all_agents
        else kept_for_others(user_id, agent_id, (st for st, *_ in s.states), s.marks)
    )
    if not kept:
        writes: list[Write] = [DeleteUserMessages(s.session_id, user_id)]
    else:
        held = {m.seq for m in kept}
        gone = tuple(m.seq for m in s.marks if m.seq not in held)
        writes = [DeleteUserMessages(s.session_id, user_id, seqs=gone, agents=(agent_id,))]
    for state, pending, tokens in s.states:
        withheld = state.withheld
        if kept and state.agent_id == agent_id:
            withheld = withhold(withheld, user_id, max(s.last_seq, *(m.seq for m in kept)))
            writes.append(SetWithheld(s.session_id, agent_id, tuple(sorted(withheld.items()))))
        after = pending_of(state, (pending, tokens), user_id, kept, withheld)
        if parted and state.agent_id == agent_id:
            head = max(after.cursor_seq, s.last_seq)
            update = {"cursor_seq": head, "pending_messages": 0, "pending_weighted_tokens": 0.0}
            after = after.model_copy(update=update)
        writes.append(MoveCursor(after))
    return s.user_messages - len(kept), writes


async def _old_forget(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, user_id: str, agent_id: str, seconds: int
) -> None:
    with monkeypatch.context() as patched:
        patched.setattr(erasure, "_user_messages", _before_be4b748)
        await store.forget_user(user_id, agent_id=agent_id, at=at(seconds))


async def _answered(store: MemoryStore, session_id: str = "s1", user_id: str = "u1") -> None:
    """a2 recorded the user's words; a1, joined at the head, only its answer quoting them."""
    await record(store, session_id, "a2", [msg("m1", HIV, user_id=user_id, seconds=1)])
    await record(store, session_id, "a1", [msg("r1", ANSWER, role="agent", seconds=2)])


async def _left(store: MemoryStore, session_id: str = "s1") -> list[str]:
    return [m.message_id for m in await store.load_messages(session_id, 0, 100)]


async def _listed(store: MemoryStore, agent_id: str | None) -> list[str]:
    """The message ids an export of u1 (under ``agent_id``, or every agent) lists."""
    out = io.StringIO()
    await export_store(store, out, agent_id=agent_id, user_id="u1", messages=True, now=at(1000))
    lines = map(json.loads, out.getvalue().splitlines())
    return [r["message_id"] for r in lines if r["type"] == "message"]


async def test_the_answer_goes_at_the_forget_of_the_agent_that_gave_it_once_repaired(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _answered(store)
    key = ScopeKey.session("a1", "s1")
    await store.commit_formation(formation(
        session_id="s1", agent_id="a1", expected_cursor=1, new_cursor=2,
        reflections=[reflection(key, 0, "u1 was diagnosed with HIV last week")],
    ))  # fmt: skip
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    before = await store.get_session("s1")
    unlisted = await _listed(store, None)

    await store.setup()  # the first start of this version
    listed = await _listed(store, "a1"), await _listed(store, None)
    taken = await store.forget_user("u1", agent_id="a1", at=at(101))

    # The old forget left a1's answer in a session of nobody, out of every export of u1.
    assert before is not None and before.user_ids == () and unlisted == []
    assert listed == (["r1"], ["r1"])
    assert [(c.messages, c.sessions) for c in taken] == [(1, 1)]
    assert await _left(store) == [] and await store.get_session("s1") is None
    assert await store.list_reflections(key, limit=10) == []
    assert await _listed(store, None) == []


async def test_the_forget_under_every_agent_takes_the_session_once_repaired(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _answered(store)
    await _old_forget(store, monkeypatch, "u1", "a2", 100)

    await store.setup()
    await store.forget_user("u1", agent_id=None, at=at(101))

    assert await _left(store) == [] and await store.get_session("s1") is None
    assert await _listed(store, None) == []


async def test_the_repaired_session_is_what_todays_forget_leaves(
    store: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    backend: tuple[str, str | None],
    tmp_path: Path,
) -> None:
    await _answered(store)
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await store.setup()
    await store.setup()  # a later start changes nothing
    (tmp_path / "today").mkdir()
    async with opened_store(backend, tmp_path / "today") as today:
        await _answered(today)
        await today.forget_user("u1", agent_id="a2", at=at(100))
        for agent_id in (None, "a1", "a2"):
            assert await store.get_session("s1", agent_id) == await today.get_session(
                "s1", agent_id
            )
        for agent_id in ("a1", "a2"):
            assert await store.get_session_agent_state(
                "s1", agent_id
            ) == await today.get_session_agent_state("s1", agent_id)


async def _views(store: MemoryStore, session_id: str) -> list[object]:
    """What a user sees of a session: its views (every agent's, each agent's), each agent's
    state and its messages."""
    session = await store.get_session(session_id)
    assert session is not None
    agents = session.agent_ids
    return [
        session,
        *[await store.get_session(session_id, a) for a in agents],
        *[await store.get_session_agent_state(session_id, a) for a in agents],
        await _left(store, session_id),
    ]


async def test_a_start_leaves_every_other_session_as_it_is(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each case its own user: a forget of one touches no other case's session.
    # A guest spoke after the old forget: a forget never takes a session a guest is in, nor the
    # answers they heard (rules.erasure.alone_in), so u1 back would take nothing more, and would
    # list a session of someone else in u1's export.
    await _answered(store, "guest", "u1")
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await record(store, "guest", "a1", [msg("g1", "hi", user_id=None, seconds=101)])
    # Today's forget: u2 is still among the users.
    await _answered(store, "kept", "u2")
    await store.forget_user("u2", agent_id="a2", at=at(102))
    # Tombstones of two users: whose words a1's answer quotes cannot be told, and both back
    # would make it a group chat (user memory off for every agent; neither forget takes it).
    await _answered(store, "two", "u3")
    await _old_forget(store, monkeypatch, "u3", "a2", 103)
    await store.import_erasures(
        [Erasure(agent_key="session:a1:two", user_id="u9", epoch=1, forgotten_at=at(104))]
    )
    # An earlier life of the session id: u4's tombstone is older than the session recorded
    # again under its id, by an agent alone.
    await record(store, "again", "a1", [msg("m1", HIV, user_id="u4", seconds=1)])
    await store.forget_user("u4", agent_id="a1", at=at(105))
    await record(store, "again", "a1", [msg("r9", "Hello?", role="agent", seconds=200)])
    # The same, imported: the file dates the session before the forget, so only who recorded
    # there tells it from one the old forget left (which stayed for another agent) (h239 D1).
    await record(store, "imported", "a1", [msg("m1", HIV, user_id="u5", seconds=1)])
    await store.forget_user("u5", agent_id="a1", at=at(106))
    await store.import_messages(
        [_agent_message("imported", seq) for seq in (1, 2)],
        sessions_created={"imported": at(5)}, cursors={"imported": {"a1": 0}},
    )  # fmt: skip
    sessions = ["guest", "kept", "two", "again", "imported"]
    before = [await _views(store, s) for s in sessions]

    await store.setup()

    assert [await _views(store, s) for s in sessions] == before
    # Four of them without a user, the store could have taken each for one to repair.
    assert [await _users(store, s) for s in sessions] == [(), ("u2",), (), (), ()]
    # The imported one is still a1's to form.
    state = await store.get_session_agent_state("imported", "a1")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (0, 2)


def _agent_message(session_id: str, seq: int) -> StoredMessage:
    return StoredMessage(
        session_id=session_id, seq=seq, message_id=f"imp-{seq}", role="agent",
        content=f"note {seq}", created_at=at(seq), user_id=None, agent_id="a1",
    )  # fmt: skip


async def _users(store: MemoryStore, session_id: str) -> tuple[str, ...]:
    session = await store.get_session(session_id)
    assert session is not None
    return session.user_ids


async def _reflected(store: MemoryStore) -> ScopeKey:
    """``_answered``, and a1's memory of the session, formed of its answer."""
    await _answered(store)
    key = ScopeKey.session("a1", "s1")
    await store.commit_formation(formation(
        session_id="s1", agent_id="a1", expected_cursor=1, new_cursor=2,
        reflections=[reflection(key, 0, "u1 was diagnosed with HIV last week")],
    ))  # fmt: skip
    return key


# A forget of u1 after the old one and before this version's first start, under every agent, or
# under a1, the only other agent of the session: it found no session (u1 was no longer among its
# users), but it would have taken the session whole had it found it.
LATER = [None, "a1"]


@pytest.mark.parametrize("later", LATER)
async def test_a_later_forget_takes_the_session_whole_at_the_repair(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, later: str | None
) -> None:
    key = await _reflected(store)
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await store.forget_user("u1", agent_id=later, at=at(150))
    found = await _left(store), await store.list_reflections(key, limit=10)

    await store.setup()  # the first start of this version

    # The later forget left a1's answer, and a1's memory of it, where nobody found them.
    assert found[0] == ["r1"] and len(found[1]) == 1
    assert await _left(store) == [] and await store.get_session("s1") is None
    assert await store.get_session_agent_state("s1", "a1") is None
    assert await store.list_reflections(key, limit=10) == []
    assert await _listed(store, None) == [] and await _listed(store, "a1") == []
    # Its session tombstone: an import of a1's memory of the session never brings it back.
    again = await store.import_reflections(found[1])
    assert (again.inserted, again.forgotten) == (0, 1)
    assert await store.list_reflections(key, limit=10) == []
    await store.setup()  # a later start finds nothing to do
    assert await store.get_session("s1") is None


@pytest.mark.parametrize("later", LATER)
async def test_a_message_said_after_the_later_forget_leaves_the_session_repaired_only(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, later: str | None
) -> None:
    key = await _reflected(store)
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await store.forget_user("u1", agent_id=later, at=at(150))
    await record(store, "s1", "a1", [msg("r2", "Are you still there?", role="agent", seconds=200)])

    await store.setup()

    # Not what the later forget was asked to take: the session as the repair leaves it, u1's
    # again, listed in u1's export, taken by u1's next forget.
    assert await _users(store, "s1") == ("u1",)
    assert await _left(store) == ["r1", "r2"]
    assert await _listed(store, None) == ["r1", "r2"]
    assert len(await store.list_reflections(key, limit=10)) == 1
    await store.forget_user("u1", agent_id=later, at=at(300))
    assert await store.get_session("s1") is None and await _listed(store, None) == []


async def test_a_later_forget_under_the_forgetting_agent_only_leaves_the_session_repaired(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a2 forgot u1 again: a1, which gave the answer, never did, and keeps its own memory."""
    key = await _reflected(store)
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await store.forget_user("u1", agent_id="a2", at=at(150))

    await store.setup()

    assert await _users(store, "s1") == ("u1",) and await _left(store) == ["r1"]
    assert len(await store.list_reflections(key, limit=10)) == 1
