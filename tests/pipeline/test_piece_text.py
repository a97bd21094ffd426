"""A piece's text and a slice's are marked by one function (transcript.marked): the same ``[…]``
where the message goes on, which as_said strips from what a model copies."""

from __future__ import annotations

from memory import transcript
from memory.pipeline import pieces

BUDGET = 400
TEXT = "All about my trip to Lisbon, the tram and the pastries by the river. " * 40


def test_a_whole_slice_as_a_piece_is_the_slice_as_its_first_read_showed_it() -> None:
    count = len(transcript.spans(TEXT, BUDGET))
    assert count > 2
    for part in range(count):
        assert pieces.text(TEXT, BUDGET, part) == transcript.sliced(TEXT, BUDGET, part)


def test_the_halves_of_a_message_within_the_budget_are_marked_at_their_cut_only() -> None:
    content = "One sentence of about forty characters. " * 20
    assert pieces.can_halve(content, len(content), 0)
    first, second = (pieces.text(content, len(content), 0, (h,)) for h in (0, 1))
    assert first.endswith(". […]") and not first.startswith("[…]")
    assert second.startswith("[…] One") and not second.endswith("[…]")
    assert transcript.as_said(first) + " " + transcript.as_said(second) == " ".join(content.split())


def test_the_marker_is_written_as_before() -> None:
    assert transcript.marked("text", before=False, after=False) == "text"
    assert transcript.marked("text", before=True, after=False) == "[…] text"
    assert transcript.marked("text", before=False, after=True) == "text […]"
    assert transcript.marked("text", before=True, after=True) == "[…] text […]"
