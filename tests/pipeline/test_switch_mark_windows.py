"""How marks of the memory switches cut formation windows and re-formed parts, and which switches
each part forms under (memory/switch_marks.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from memory import switch_marks
from memory.degraded import ReformPart
from memory.models import AgentConfig, SessionAgentState, SessionInfo
from memory.reform import _cut

AGENT = AgentConfig(agent_id="eve", name="Eve")
# Seqs 1-3 recorded with user memory off, 4-6 with agent memory off, the rest under AGENT's.
MARKS: switch_marks.SwitchMarks = ((3, False, True), (6, True, False))


def test_a_window_ends_at_the_first_mark_inside_it() -> None:
    assert switch_marks.window_end(0, 10, MARKS) == 3
    assert switch_marks.window_end(3, 10, MARKS) == 6
    assert switch_marks.window_end(6, 10, MARKS) == 10
    assert switch_marks.window_end(0, 3, MARKS) == 3  # a mark at its last message: no cut
    assert switch_marks.window_end(0, 10, ()) == 10


def _state(
    last_seq: int, marks: switch_marks.SwitchMarks, recorded_under: tuple[bool, bool] | None
) -> SessionAgentState:
    return SessionAgentState(
        session_id="s1", agent_id="eve", last_seq=last_seq, switch_marks=marks,
        recorded_under=recorded_under,
    )  # fmt: skip


def test_each_part_forms_under_the_switches_it_was_recorded_under() -> None:
    state = _state(8, MARKS, (True, True))

    def under(upto: int, state: SessionAgentState = state) -> tuple[bool, bool]:
        return switch_marks.switches(switch_marks.as_recorded(AGENT, state, upto))

    assert [under(u) for u in (2, 3, 5, 6, 7)] == [
        (False, True), (False, True), (True, False), (True, False), (True, True)
    ]  # fmt: skip
    # The open stretch's switches, not the agent's now; recorded before they were kept: the agent's.
    assert under(7, _state(8, MARKS, (False, False))) == (False, False)
    assert under(7, _state(8, (), None)) == (True, True)


def test_a_recording_closes_a_stretch_only_where_the_switches_changed_after_messages() -> None:
    on, off = (True, True), (False, True)
    assert switch_marks.recorded(_state(4, (), on), on) is None
    assert switch_marks.recorded(_state(4, (), on), off) == (((4, True, True),), off)
    # Nothing recorded since the last mark: the open stretch takes the new switches.
    assert switch_marks.recorded(_state(4, ((4, True, True),), off), on) == (
        ((4, True, True),), on
    )  # fmt: skip
    # Recorded before the switches were kept: those messages join the stretch now opened.
    assert switch_marks.recorded(_state(4, (), None), off) == ((), off)


def test_a_re_formed_part_is_cut_at_every_mark_and_at_the_group_start() -> None:
    session = SessionInfo(
        session_id="s1",
        user_ids=("u1", "u2"),
        session_user_ids=("u1", "u2"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    part = ReformPart(after_seq=0, upto_seq=10, facts=True, reflections=False)
    # u2 spoke first at seq 5: a group from there.
    cut = _cut([part], session, {"u1": 1, "u2": 5}, MARKS)
    assert [(p.after_seq, p.upto_seq) for p in cut] == [(0, 3), (3, 4), (4, 6), (6, 10)]
    assert all(p.facts and not p.reflections for p in cut)
