"""The repair of the sessions a forget under one agent left without their user before be4b748
(rules.repair_parted), pure: which sessions it takes for one, and what it writes."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory.models import SessionAgentState
from memory.store.rules.lifecycle_writes import DeleteUserMessages, SetWithheld
from memory.store.rules.repair_parted import (
    PartedRequest,
    PartedSession,
    Tombstone,
    forgotten,
    plan_repair,
    scope_of,
)
from memory.store.rules.writes import AddSessionUsers, MoveCursor
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
