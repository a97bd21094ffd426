"""The message import planner on its own (no database): a file's withheld marks merged into the
agents' own, never lowering one, and what an agent has withheld is not pending for it."""

from __future__ import annotations

from memory.models import SessionAgentState, StoredMessage
from memory.store.rules.import_sessions import (
    SessionImportSnapshot,
    plan_import_session,
    session_import_request,
)
from memory.store.rules.lifecycle_writes import DeleteUserMessages, SetWithheld
from memory.store.rules.withheld import file_bounds
from memory.store.rules.writes import MoveCursor
from tests.store.builders import at


def stored(seq: int, user: str | None, agent: str) -> StoredMessage:
    return StoredMessage(
        session_id="s1", seq=seq, message_id=f"m{seq}", role="user" if user else "agent",
        content=f"message {seq}", created_at=at(seq), user_id=user, agent_id=agent,
    )  # fmt: skip


# a1 records u1 (1), a2 records u2 (2); the file withholds 1 from a2 (a forget of u1 under a2).
FILE = [stored(1, "u1", "a1"), stored(2, "u2", "a2")]
MARKS = file_bounds([(FILE[0], ["a2"]), (FILE[1], [])])


def snapshot(states: dict[str, SessionAgentState]) -> SessionImportSnapshot:
    return SessionImportSnapshot(
        exists=bool(states), last_seq=0, last_message_at=None, user_ids=(), states=states,
        stored={}, stored_all=(0, 0.0), taken=frozenset(), epochs={},
    )  # fmt: skip


def test_the_file_marks_give_each_agent_the_users_highest_seq_withheld_from_it() -> None:
    assert MARKS == {"s1": {"a2": {"u1": 1}}}


def test_a_new_session_withholds_what_the_file_says_and_not_from_the_others() -> None:
    req = session_import_request("s1", FILE, withheld=MARKS["s1"])

    plan = plan_import_session(req, FILE, snapshot({}))

    assert [w for w in plan.writes if isinstance(w, SetWithheld)] == [
        SetWithheld("s1", "a2", (("u1", 1),))
    ]
    # u1 joins the session (a1's message), not a2's participants.
    assert [w for w in plan.writes if isinstance(w, DeleteUserMessages)] == [
        DeleteUserMessages("s1", "u1", seqs=(), agents=("a2",))
    ]


def test_a_stored_mark_is_never_lowered_and_what_is_withheld_is_not_pending() -> None:
    # a2 is stored with u1 withheld up to 5 (a forget in this store) and x1 (seq 1) not formed
    # yet; the file adds 3 (u1) and 4 (u3), withheld from a2 up to 3 and 4.
    a2 = SessionAgentState(session_id="s1", agent_id="a2", withheld={"u1": 5})
    snap = SessionImportSnapshot(
        exists=True, last_seq=1, last_message_at=at(1), user_ids=("u1",), states={"a2": a2},
        stored={"x1": 1}, stored_all=(1, 1.0), taken=frozenset(), epochs={},
    )  # fmt: skip
    file = [
        stored(1, "u1", "a1").model_copy(update={"message_id": "x1"}),
        stored(3, "u1", "a1"),
        stored(4, "u3", "a1"),
    ]
    req = session_import_request("s1", file, withheld={"a2": {"u1": 3, "u3": 4}})

    plan = plan_import_session(req, file, snap)

    [mark] = [w for w in plan.writes if isinstance(w, SetWithheld) and w.agent_id == "a2"]
    assert dict(mark.withheld) == {"u1": 5, "u3": 4}
    # a2's cursor stays before x1, which it has not formed; 3 and 4 are not pending for it
    # (they would be, 2 more, were they not withheld): its state is left as it is.
    assert not [w for w in plan.writes if isinstance(w, MoveCursor) and w.state.agent_id == "a2"]
    # The users of the imported messages join the session, not a2's participants: it withholds
    # every message of theirs.
    assert [w for w in plan.writes if isinstance(w, DeleteUserMessages)] == [
        DeleteUserMessages("s1", "u1", seqs=(), agents=("a2",)),
        DeleteUserMessages("s1", "u3", seqs=(), agents=("a2",)),
    ]
