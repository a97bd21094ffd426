"""A formation id names the session's incarnation: whether a formation read this incarnation of a
session is told by the id alone, not by comparing clocks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.ids import formation_id, formed_in

CREATED = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def test_a_formation_id_tells_which_incarnation_of_its_session_it_read() -> None:
    this = formation_id("s1", "eve", 0, 4, CREATED)
    assert formed_in(this, "s1", CREATED) is True
    assert formed_in(this, "s1", CREATED + timedelta(days=3)) is False  # recorded again
    # What the id cannot tell: another session's, one named before incarnations were, none.
    assert formed_in(this, "s2", CREATED) is None
    assert formed_in(formation_id("s1", "eve", 0, 4), "s1", CREATED) is None
    assert formed_in(None, "s1", CREATED) is None


def test_a_re_formed_window_names_the_incarnation_its_original_read() -> None:
    # `mnemos degraded reform` forms under "<original>:reform:<n>[:<range>]".
    this = formation_id("s1", "eve", 0, 4, CREATED)
    assert formed_in(f"{this}:reform:3", "s1", CREATED) is True
    assert formed_in(f"{this}:reform:3:2-3", "s1", CREATED + timedelta(days=3)) is False
