"""The order a consolidation and the context read reflections in (memory.models.in_said_order):
oldest said first, a formation's reflections together in the order its model gave them, those
stored before said_at was kept by when they were formed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.models import Reflection, ScopeKey, in_said_order, said_before

T0 = datetime(2026, 3, 1, tzinfo=UTC)
KEY = ScopeKey(scope="user", agent_id="eve", user_id="alice")


def day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def formed(
    content: str, formation: str | None, *, formed_on: float, said_on: float | None
) -> Reflection:
    return Reflection(
        reflection_id=f"r-{content}",
        scope_key=KEY,
        content=content,
        source_session_id="s1",
        formation_id=formation,
        said_at=None if said_on is None else day(said_on),
        formed_at=day(formed_on),
    )


def contents(reflections: list[Reflection]) -> list[str]:
    return [r.content for r in in_said_order(reflections)]


def test_a_conversation_formed_late_goes_before_what_was_said_after_it() -> None:
    recent = formed("green tea", "f-recent", formed_on=250, said_on=249)
    backfilled = formed("black coffee", "f-march", formed_on=251, said_on=0)
    assert contents([recent, backfilled]) == ["black coffee", "green tea"]


def test_a_formation_keeps_its_answers_order_whichever_message_each_cites() -> None:
    """The model weighed them in one answer: citing message 9 then message 2 is not a reason to
    swap them (and a buffer formed in order reads as it always did)."""
    first = formed("first", "f1", formed_on=1, said_on=0.9)
    second = formed("second", "f1", formed_on=1, said_on=0.2)
    later = formed("later", "f2", formed_on=2, said_on=1.5)
    assert contents([first, second, later]) == ["first", "second", "later"]
    # A late formation of older words, in between: the whole of it before f1.
    old_a = formed("old a", "f0", formed_on=3, said_on=0.1)
    old_b = formed("old b", "f0", formed_on=3, said_on=0.05)
    assert contents([first, second, later, old_a, old_b]) == [
        "old a", "old b", "first", "second", "later",
    ]  # fmt: skip


def test_a_reflection_stored_before_said_at_was_kept_is_ordered_by_when_it_was_formed() -> None:
    stored_before = formed("before", "f1", formed_on=5, said_on=None)
    unsourced_import = formed("imported", None, formed_on=1, said_on=None)
    said_later = formed("said later", "f2", formed_on=7, said_on=6)
    said_earlier = formed("said earlier", "f3", formed_on=8, said_on=4)
    assert contents([stored_before, unsourced_import, said_later, said_earlier]) == [
        "imported", "said earlier", "before", "said later",
    ]  # fmt: skip


def test_what_was_said_before_the_blobs_latest_is_earlier_a_formation_together() -> None:
    """A blob that absorbed what was said up to day 10: a backfill of day 2 is earlier than it,
    a formation that cites day 3 and day 12 is news to it, whole (its model weighed them in one
    answer); a blob that does not know when (None) finds every reflection news."""
    backfill = formed("march", "f-old", formed_on=20, said_on=2)
    mixed_a = formed("mixed a", "f-mixed", formed_on=21, said_on=3)
    mixed_b = formed("mixed b", "f-mixed", formed_on=21, said_on=12)
    at_the_blob = formed("same moment", "f-same", formed_on=22, said_on=10)
    earlier, later = said_before([mixed_a, mixed_b, backfill, at_the_blob], day(10))
    assert [r.content for r in earlier] == ["march"]
    assert [r.content for r in later] == ["same moment", "mixed a", "mixed b"]
    assert said_before([backfill, mixed_a], None) == ([], in_said_order([backfill, mixed_a]))
