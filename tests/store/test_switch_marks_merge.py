"""How an import makes marks of the memory switches a file names message by message, and merges
them into those a store holds (memory/switch_marks.py: of_messages, merged)."""

from __future__ import annotations

from memory import switch_marks

ON, OFF = (True, True), (False, True)


def test_a_file_s_switches_are_marked_at_the_end_of_each_run() -> None:
    assert switch_marks.of_messages({}) == ()
    assert switch_marks.of_messages({3: OFF, 1: OFF, 4: ON, 6: ON}) == ((3, *OFF), (6, *ON))


def test_a_merge_keeps_the_marks_of_either_side_and_the_store_s_where_both_have_one() -> None:
    own = ((2, *OFF),)
    assert switch_marks.merged(own, ((5, *ON),)) == ((2, *OFF), (5, *ON))
    assert switch_marks.merged(own, ((2, *ON), (5, *OFF))) == ((5, *OFF),)  # 2 is the store's
    # The same marks again change nothing; one part then another of a session ends as one file.
    assert switch_marks.merged(own, own) == own
    assert switch_marks.merged(((3, *OFF),), ((3, *OFF), (6, *ON))) == ((3, *OFF), (6, *ON))


def test_a_mark_followed_by_one_under_the_same_switches_closes_nothing_of_its_own() -> None:
    # Two parts of one stretch, each imported with its own last message marked: one stretch.
    assert switch_marks.merged(((3, *ON),), ((6, *ON),)) == ((6, *ON),)
