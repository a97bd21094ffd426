"""The erasure rules, pure: which users a commit writes for, when it is discarded, what a
forget deletes."""

from __future__ import annotations

from memory.models import SessionAgentState
from memory.store.rules.erasure import (
    ForgetRequest,
    ForgetSnapshot,
    UserSession,
    commit_users,
    erased_since,
    plan_forget,
)
from memory.store.rules.lifecycle_writes import (
    DeleteSessions,
    DeleteUserMessages,
    PutErasure,
    SetWithheld,
)
from memory.store.rules.withheld import MessageMark
from memory.store.rules.writes import MoveCursor
from tests.store.builders import USER_KEY, add, at, commit, reflection, unit


def test_a_commit_is_discarded_when_a_users_epoch_moved_since_its_window() -> None:
    group = commit(ops=[add("n1", "Sails", unit(1))]).model_copy(
        update={"user_epochs": {"u1": 0, "u2": 3}}
    )
    assert commit_users(group) == ("u1", "u2")
    assert not erased_since(group, {"u1": 0, "u2": 3})
    assert erased_since(group, {"u1": 1, "u2": 3})
    assert erased_since(group, {"u1": 0, "u2": 4})
    # A commit from before epochs existed names its users through its ops and reflections.
    old = commit(reflections=[reflection(USER_KEY, 1)])
    assert commit_users(old) == ("u1",)
    assert not erased_since(old, {})
    assert erased_since(old, {"u1": 1})


def _state(session: str, agent: str, cursor: int) -> SessionAgentState:
    return SessionAgentState(session_id=session, agent_id=agent, cursor_seq=cursor, last_seq=5)


def test_forget_deletes_lone_sessions_whole_and_the_users_part_of_shared_ones() -> None:
    lone = UserSession("s1", ("u1",), ("a1",), 4, 2, ((_state("s1", "a1", 4), 0, 0.0),))
    with_b = UserSession(
        "s2", ("u1",), ("a1", "b1"), 3, 2, ((_state("s2", "a1", 1), 1, 2.0),),
        marks=(MessageMark(1, "a1", 1.0), MessageMark(2, "a1", 1.0)),
    )  # fmt: skip
    shared = UserSession("s3", ("u1", "u2"), ("a1",), 5, 2, ((_state("s3", "a1", 2), 2, 3.0),))
    snapshot = ForgetSnapshot(
        epoch=2, facts=[], reflections=3, blob=True, sessions=[lone, with_b, shared],
        cached=frozenset({"h1", "h2"}), in_use=frozenset({"h2"}),
    )  # fmt: skip

    plan = plan_forget(ForgetRequest("a1", "u1", all_agents=False), snapshot, at=at(0))

    assert isinstance(plan.writes[0], PutErasure) and plan.writes[0].epoch == 3
    # Another agent's session stays for it; the records of the formations go with the session.
    assert DeleteSessions(("s1",), ("a1:s1:",)) in plan.writes
    # The user stays s2's participant, for b1's forget to find it (h229 D1).
    assert DeleteUserMessages("s2", "u1", seqs=(1, 2), agents=("a1",)) in plan.writes
    assert DeleteUserMessages("s3", "u1") in plan.writes
    moved = [w.state for w in plan.writes if isinstance(w, MoveCursor)]
    # s2, the user's alone, stays for b1: nothing of it left for a1 to form (its replies would
    # form the user's memory again); s3, shared with u2, keeps the others' messages pending.
    assert [(s.session_id, s.pending_messages, s.pending_weighted_tokens) for s in moved] == [
        ("s2", 0, 0.0), ("s3", 2, 3.0),
    ]  # fmt: skip
    counts = plan.result
    assert (counts.sessions, counts.messages, counts.embedding_cache) == (1, 4 + 2 + 2, 1)
    assert (counts.reflections, counts.blobs, counts.epoch) == (3, 1, 3)
    # For every agent, a session the user was alone in goes whole whatever its agents.
    every = plan_forget(ForgetRequest("a1", "u1", all_agents=True), snapshot, at=at(0))
    assert DeleteSessions(("s1", "s2"), ("a1:s1:", "a1:s2:", "b1:s2:")) in every.writes


def _forget_in(session: UserSession) -> list[object]:
    snapshot = ForgetSnapshot(
        epoch=0, facts=[], reflections=0, blob=False, sessions=[session],
        cached=frozenset(), in_use=frozenset(),
    )  # fmt: skip
    return list(plan_forget(ForgetRequest("a1", "u1", all_agents=False), snapshot, at=at(0)).writes)


def test_a_message_without_its_recorder_is_kept_for_the_other_agents() -> None:
    """Rows stored before messages kept their recorder may be any agent's: a forget under a1
    keeps them for b1 (withheld from a1), though b1 formed them; a1's own record goes. Once b1
    withholds them too (a forget under b1 before), nothing holds them and all go."""
    a1, b1 = _state("s", "a1", 5), _state("s", "b1", 5)  # both formed everything
    marks = (MessageMark(1, None, 1.0), MessageMark(2, "a1", 1.0))
    states = ((a1, 0, 0.0), (b1, 0, 0.0))
    shared = UserSession("s", ("u1", "u2"), ("a1", "b1"), 6, 2, states, last_seq=5, marks=marks)

    writes = _forget_in(shared)

    assert DeleteUserMessages("s", "u1", seqs=(2,), agents=("a1",)) in writes
    assert SetWithheld("s", "a1", (("u1", 5),)) in writes
    b1_withholds = b1.model_copy(update={"withheld": {"u1": 5}})
    states = ((a1, 0, 0.0), (b1_withholds, 0, 0.0))
    writes = _forget_in(UserSession("s", ("u1", "u2"), ("a1", "b1"), 6, 2, states, 5, marks))
    assert DeleteUserMessages("s", "u1") in writes
    assert not any(isinstance(w, SetWithheld) for w in writes)
