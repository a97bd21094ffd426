"""memory.triggers.HeldTriggers: one formation request per commit, never held for good."""

from __future__ import annotations

from memory.triggers import HeldTriggers


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_request_is_held_until_the_cursor_moves() -> None:
    held = HeldTriggers(30, clock=Clock())
    assert not held.holds("eve", "s1", 0)
    held.sent("eve", "s1", 0)
    assert held.holds("eve", "s1", 0)
    assert not held.holds("eve", "s2", 0)  # per session
    assert not held.holds("ann", "s1", 0)  # and per agent
    assert not held.holds("eve", "s1", 45)  # its formation committed: ask again
    assert not held.holds("eve", "s1", 0)  # released for good, not only for that cursor


def test_a_request_whose_formation_never_commits_is_sent_again_after_the_hold() -> None:
    clock = Clock()
    held = HeldTriggers(30, clock=clock)
    held.sent("eve", "s1", 0)
    clock.now += 29.9
    assert held.holds("eve", "s1", 0)
    clock.now += 0.1
    assert not held.holds("eve", "s1", 0)


def test_hold_zero_holds_nothing() -> None:
    held = HeldTriggers(0, clock=Clock())
    held.sent("eve", "s1", 0)
    assert not held.holds("eve", "s1", 0)


def test_the_oldest_requests_are_forgotten_beyond_the_capacity() -> None:
    held = HeldTriggers(30, capacity=2, clock=Clock())
    for session in ("s1", "s2", "s3"):
        held.sent("eve", session, 0)
    assert not held.holds("eve", "s1", 0)  # forgotten: costs one redundant request, no more
    assert held.holds("eve", "s2", 0) and held.holds("eve", "s3", 0)
