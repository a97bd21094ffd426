"""The repair of the sessions a forget under one agent left without their user before be4b748
(rules.repair_parted), pure: which sessions it takes for one, and what it writes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory.models import SessionAgentState
from memory.store.rules.lifecycle_writes import (
    DeleteSessions,
    DeleteUserMessages,
    PutErasure,
    SetWithheld,
)
from memory.store.rules.repair_parted import (
    PartedRequest,
    PartedSession,
    Tombstone,
    forgotten,
    later_forget,
    plan_repair,
    scope_of,
)
from memory.store.rules.writes import AddSessionUsers, BumpScopeVersions, MoveCursor
from tests.store.builders import at


def _state(agent: str, cursor: int) -> SessionAgentState:
    return SessionAgentState(session_id="s1", agent_id=agent, cursor_seq=cursor, last_seq=6)


def _parted(*tombstones: Tombstone, **changes: Any) -> PartedSession:
    """s1 of a1, a2 and a3: a2 and a3 took no part in it since their forget (their cursors at
    4), a1 answered up to 6, nobody there."""
    s = PartedSession(
        session_id="s1", created_at=at(1), users=(), guests=False, last_seq=6, messages=2,
        replies=2, states=(_state("a1", 2), _state("a2", 4), _state("a3", 4)),
        tombstones=tombstones,
    )  # fmt: skip
    return replace(s, **changes)


def _by(agent: str, user: str = "u1", seconds: int = 100) -> Tombstone:
    return Tombstone(f"session:{agent}:s1", user, at(seconds))


def test_the_forgetting_agent_is_read_from_the_tombstones_key() -> None:
    assert scope_of("session:a2:s1") == ("a2", "s1")


def test_the_user_goes_back_and_each_forgetting_agents_bounds_go_to_the_head() -> None:
    s = _parted(_by("a2"), _by("a3", seconds=101))
    plan = plan_repair(PartedRequest("s1", at(1), "u1"), s)

    assert forgotten(s) == ("u1", ("a2", "a3"))
    assert plan.result == 1
    assert plan.writes[:2] == (
        AddSessionUsers("s1", ("u1",)),
        DeleteUserMessages("s1", "u1", seqs=(), agents=("a1", "a2", "a3")),
    )
    assert [w for w in plan.writes if isinstance(w, SetWithheld)] == [
        SetWithheld("s1", "a2", (("", 6), ("u1", 6))),
        SetWithheld("s1", "a3", (("", 6), ("u1", 6))),
    ]
    moved = [w.state for w in plan.writes if isinstance(w, MoveCursor)]
    assert [(m.agent_id, m.cursor_seq, m.pending_messages) for m in moved] == [
        ("a2", 6, 0),
        ("a3", 6, 0),
    ]


def test_a_message_neither_the_users_nor_a_reply_keeps_the_replies_to_the_forgetting_agent() -> (
    None
):
    """A guest's words an older process recorded unmarked: as today's forget, no replies bound."""
    plan = plan_repair(PartedRequest("s1", at(1), "u1"), _parted(_by("a2"), messages=3))
    assert [w for w in plan.writes if isinstance(w, SetWithheld)] == [
        SetWithheld("s1", "a2", (("u1", 6),))
    ]


def test_sessions_the_old_forget_did_not_leave_are_left_as_they_are() -> None:
    assert forgotten(_parted(_by("a2"), guests=True)) is None
    assert forgotten(_parted(_by("a2"), users=("u1",))) is None
    assert forgotten(_parted(_by("a2"), messages=0, replies=0)) is None
    assert forgotten(_parted(_by("a2"), _by("a3", "u2"))) is None  # whose, cannot be told
    assert forgotten(_parted(_by("a2", seconds=0))) is None  # of an earlier life of the id
    assert forgotten(_parted()) is None
    # Found for one user, decided for another meanwhile: nothing written.
    assert plan_repair(PartedRequest("s1", at(1), "u2"), _parted(_by("a2"))).writes == ()
    assert plan_repair(PartedRequest("s1", at(1), "u1"), None).writes == ()


def _later(*forgets: tuple[str, int], said: int = 10, **changes: Any) -> PartedSession:
    """s1 parted by a2's forget at 100; the later forgets of u1 (agent key, when), epoch 3 each;
    its last message said at ``said``."""
    marks = {(key, "u1"): (3, at(seconds)) for key, seconds in forgets}
    return _parted(_by("a2"), last_message_at=at(said), forgets=marks, **changes)


def test_a_later_forget_under_every_agent_takes_the_session_whole() -> None:
    plan = plan_repair(PartedRequest("s1", at(1), "u1"), _later(("*", 150), messages=3))

    keys = ("session:a1:s1", "session:a2:s1", "session:a3:s1")
    assert plan.result == 1
    assert plan.writes == (
        DeleteSessions(("s1",), ("a1:s1:", "a2:s1:", "a3:s1:")),
        *(PutErasure(k, "u1", 3, at(150), "{}") for k in keys),
        BumpScopeVersions(keys),
    )


def test_later_forgets_under_each_other_agent_take_it_where_every_message_is_a_reply() -> None:
    both = (("a1", 150), ("a3", 160))
    assert later_forget(_later(*both), "u1", ("a2",)) == (3, at(160))  # the last of them
    assert later_forget(_later(*both, messages=3), "u1", ("a2",)) is None  # a message unmarked
    assert later_forget(_later(("a1", 150)), "u1", ("a2",)) is None  # a3 never forgot u1
    assert later_forget(_later(("a1", 150), ("a3", 90)), "u1", ("a2",)) is None  # a3's before
    assert later_forget(_later(("a2", 150)), "u1", ("a2",)) is None  # a2's own again
    assert later_forget(_later(("a1", 150), ("a3", 160), said=155), "u1", ("a2",)) is None


def test_only_a_forget_after_the_old_one_and_after_every_message_counts() -> None:
    assert later_forget(_later(("*", 100)), "u1", ("a2",)) is None  # the old forget's own time
    assert later_forget(_later(("*", 150), said=150), "u1", ("a2",)) is None
    assert later_forget(_later(("*", 150)), "u1", ("a2",)) == (3, at(150))
    # No time known for the messages: nothing proves them older.
    s = replace(_later(("*", 150)), last_message_at=None)
    assert later_forget(s, "u1", ("a2",)) is None
    assert plan_repair(PartedRequest("s1", at(1), "u1"), s).writes[0] == AddSessionUsers(
        "s1", ("u1",)
    )
