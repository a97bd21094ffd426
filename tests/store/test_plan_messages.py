"""The record_messages planner on its own: seqs, duplicates, counters, newcomers (no database)."""

from __future__ import annotations

from datetime import timedelta, timezone

import pytest

from memory.errors import ConflictError, InvalidInputError, NotFoundError
from memory.models import MessageIn, RecordOutcome, SessionAgentState
from memory.store.rules import RecordSnapshot, plan_record_messages, said, weighted_tokens
from memory.store.rules.writes import (
    AddSessionAgent,
    AddSessionUsers,
    AdvanceSession,
    CreateSession,
    InsertMessages,
    MarkGuests,
    Plan,
)
from tests.store.builders import CHARS_PER_TOKEN, WEIGHTS, at, msg

NEW_SESSION = RecordSnapshot(
    session_exists=False, last_seq=0, last_message_at=None, state=None, stored={}
)


def plan(
    messages: list[MessageIn], snapshot: RecordSnapshot, agent: str = "a1"
) -> Plan[RecordOutcome]:
    return plan_record_messages(
        "s1", agent, messages, weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN, now=at(50),
        snapshot=snapshot,
    )  # fmt: skip


def test_weighted_tokens_weigh_the_role_and_round_up() -> None:
    assert weighted_tokens(msg("m", "x" * 5), WEIGHTS, 4.0) == 2.0  # user: 1.0 * ceil(5/4)
    assert weighted_tokens(msg("m", "x" * 8, role="agent"), WEIGHTS, 4.0) == 1.0
    assert weighted_tokens(msg("m", "x" * 4, role="tool"), {"other": 3.0}, 4.0) == 3.0


def test_first_messages_create_the_session_with_the_next_seqs() -> None:
    out = plan([msg("m1", "x" * 4, seconds=1), msg("m2", "x" * 8, seconds=2)], NEW_SESSION)

    kinds = [type(w) for w in out.writes]
    assert kinds == [
        CreateSession,
        AddSessionAgent,
        InsertMessages,
        AddSessionUsers,
        AdvanceSession,
    ]
    [insert] = [w for w in out.writes if isinstance(w, InsertMessages)]
    assert [(m.message.seq, m.message.message_id, m.weighted_tokens) for m in insert.messages] == [
        (1, "m1", 1.0),
        (2, "m2", 2.0),
    ]
    assert out.writes[-1] == AdvanceSession("s1", 2, at(2), 2, 3.0)
    assert (out.result.inserted, out.result.duplicates) == (0 + 2, 0)
    state = out.result.state
    assert (state.cursor_seq, state.last_seq, state.pending_messages) == (0, 2, 2)
    assert (state.pending_weighted_tokens, state.last_message_at) == (3.0, at(2))


def test_a_new_user_message_without_a_user_id_marks_the_session_as_having_guests() -> None:
    guest = plan([msg("m1", user_id="u1"), msg("m2", user_id=None)], NEW_SESSION)
    assert [w for w in guest.writes if isinstance(w, MarkGuests)] == [MarkGuests("s1")]
    others = plan([msg("m1", role="agent"), msg("m2", role="tool"), msg("m3")], NEW_SESSION)
    assert not any(isinstance(w, MarkGuests) for w in others.writes)
    stored = RecordSnapshot(
        session_exists=True, last_seq=1, last_message_at=at(0), state=None,
        stored={"m2": said(msg("m2", user_id=None))},
    )  # fmt: skip
    again = plan([msg("m2", user_id=None)], stored)  # a retry: nothing new said
    assert not any(isinstance(w, MarkGuests) for w in again.writes)


def test_stored_and_repeated_ids_are_duplicates_and_take_no_seq() -> None:
    state = SessionAgentState(
        session_id="s1", agent_id="a1", last_seq=3, pending_messages=1,
        pending_weighted_tokens=1.0, last_message_at=at(9),
    )  # fmt: skip
    snap = RecordSnapshot(
        session_exists=True, last_seq=3, last_message_at=at(9), state=state,
        stored={"m1": said(msg("m1"))},
    )  # fmt: skip
    out = plan([msg("m1"), msg("m4", "x" * 4, seconds=5), msg("m4", "x" * 4)], snap)

    [insert] = [w for w in out.writes if isinstance(w, InsertMessages)]
    assert [(m.message.seq, m.message.content) for m in insert.messages] == [(4, "x" * 4)]
    assert (out.result.inserted, out.result.duplicates) == (1, 2)
    # An older message does not move last_message_at back.
    assert out.result.state.last_message_at == at(9)
    assert (out.result.state.pending_messages, out.result.state.pending_weighted_tokens) == (2, 2.0)
    assert not any(isinstance(w, CreateSession | AddSessionAgent) for w in out.writes)


def test_a_message_id_with_another_content_is_refused_whole() -> None:
    """A message id names one message: sent again with other words (an edit, or an id used
    twice), the call is refused, not the new words dropped as a duplicate."""
    state = SessionAgentState(session_id="s1", agent_id="a1", last_seq=1)
    snap = RecordSnapshot(
        session_exists=True, last_seq=1, last_message_at=at(1), state=state,
        stored={"m1": said(msg("m1"))},
    )  # fmt: skip
    with pytest.raises(ConflictError, match="'m1' of session s1 already stored"):
        plan([msg("m2"), msg("m1", "hello there, I moved to Porto")], snap)
    with pytest.raises(InvalidInputError, match="'m2' appears twice"):
        plan([msg("m2", "one"), msg("m2", "two")], snap)


def test_a_message_id_said_again_by_another_speaker_is_refused_whole() -> None:
    """The same words under a stored id, from another user or in another role ("ok" under an id
    numbered per user), are another message: refused, not dropped as a duplicate unsaid."""
    state = SessionAgentState(session_id="s1", agent_id="a1", last_seq=1)
    snap = RecordSnapshot(
        session_exists=True, last_seq=1, last_message_at=at(1), state=state,
        stored={"m1": said(msg("m1", user_id="carol"))},
    )  # fmt: skip
    for other in (msg("m1", user_id="dan"), msg("m1", user_id=None), msg("m1", role="agent")):
        with pytest.raises(ConflictError, match="another content, role or user id"):
            plan([other], snap)
    assert plan([msg("m1", user_id="carol")], snap).result.duplicates == 1  # a retry
    with pytest.raises(InvalidInputError, match="'m2' appears twice"):
        plan([msg("m2", user_id="carol"), msg("m2", user_id="dan")], snap)


def test_only_duplicates_write_nothing() -> None:
    state = SessionAgentState(session_id="s1", agent_id="a1", last_seq=1)
    snap = RecordSnapshot(
        session_exists=True, last_seq=1, last_message_at=at(1), state=state,
        stored={"m1": said(msg("m1"))},
    )  # fmt: skip
    out = plan([msg("m1")], snap)
    assert out.writes == ()
    assert (out.result.inserted, out.result.duplicates, out.result.state) == (0, 1, state)


def test_a_newcomer_joins_at_the_head_with_nothing_pending() -> None:
    snap = RecordSnapshot(
        session_exists=True, last_seq=4, last_message_at=at(4), state=None,
        stored={"m4": said(msg("m4"))},
    )  # fmt: skip
    out = plan([msg("m4")], snap, agent="a2")
    assert out.writes == (
        AddSessionAgent(
            SessionAgentState(
                session_id="s1",
                agent_id="a2",
                cursor_seq=4,
                last_seq=4,
                last_message_at=at(4),
            )
        ),
    )
    assert out.result.state.cursor_seq == 4


def test_an_empty_batch_is_refused_before_any_write() -> None:
    """Not a new session, nor an agent joining one, with nothing said (HTTP refuses it too)."""
    for snapshot in (NEW_SESSION, RecordSnapshot(True, 4, at(4), None, {}, ("a1",))):
        with pytest.raises(InvalidInputError, match="no messages to record"):
            plan([], snapshot, agent="a2")


def test_only_user_messages_add_users_in_order() -> None:
    messages = [
        msg("m1", user_id="u2"), msg("m2", role="agent"), msg("m3", user_id="u1"),
        msg("m4", user_id="u2"),
    ]  # fmt: skip
    [users] = [w for w in plan(messages, NEW_SESSION).writes if isinstance(w, AddSessionUsers)]
    assert users.user_ids == ("u2", "u1")


def test_chars_per_token_must_be_positive() -> None:
    with pytest.raises(InvalidInputError):
        plan_record_messages(
            "s1", "a1", [msg("m1")], weights=WEIGHTS, chars_per_token=0, now=at(0),
            snapshot=NEW_SESSION,
        )  # fmt: skip


def test_a_caller_for_some_agents_may_not_join_a_session_holding_another() -> None:
    bobs = RecordSnapshot(
        session_exists=True, last_seq=3, last_message_at=at(3), state=None, stored={},
        agent_ids=("bob",),
    )  # fmt: skip
    with pytest.raises(NotFoundError, match="no session 's1' for agent 'eve'"):
        plan_record_messages(
            "s1", "eve", [msg("e1")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
            now=at(50), snapshot=bobs, may_join={"eve"},
        )  # fmt: skip
    for may_join in (None, {"eve", "bob"}):
        out = plan_record_messages(
            "s1", "eve", [msg("e1")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN,
            now=at(50), snapshot=bobs, may_join=may_join,
        )  # fmt: skip
        assert out.result.inserted == 1
    new = plan_record_messages(
        "s1", "eve", [msg("e1")], weights=WEIGHTS, chars_per_token=CHARS_PER_TOKEN, now=at(50),
        snapshot=NEW_SESSION, may_join={"eve"},
    )  # fmt: skip
    assert new.result.inserted == 1


def test_a_message_dated_ahead_of_its_recording_is_stored_as_said_then_on_its_own_clock() -> None:
    """A backend's clock 30 s ahead (accepted: input_rules.FUTURE_SKEW): the message is stored
    as said when recorded (at 50), never after, so what is recorded later is said later; its
    UTC offset is kept (the speaker's calendar), and the session's last message is at 50."""
    tokyo = timezone(timedelta(hours=9))
    ahead = msg("m2", seconds=80).model_copy(update={"created_at": at(80).astimezone(tokyo)})
    out = plan([msg("m1", seconds=10), ahead], NEW_SESSION)

    [insert] = [w for w in out.writes if isinstance(w, InsertMessages)]
    stored = [(m.message.created_at, m.message.utc_offset_minutes) for m in insert.messages]
    assert stored == [(at(10), 0), (at(50), 540)]
    assert all(m.message.created_at.utcoffset() == timedelta(0) for m in insert.messages)
    [advance] = [w for w in out.writes if isinstance(w, AdvanceSession)]
    assert (advance.last_message_at, out.result.state.last_message_at) == (at(50), at(50))
