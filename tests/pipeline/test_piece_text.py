"""A piece's text and a slice's are marked by one function (transcript.marked): the same ``[…]``
where the message goes on, which as_said strips from what a model copies."""

from __future__ import annotations

from memory import transcript
from memory.pipeline import pieces
from memory.transcript import CUT_RULE, SENTENCE_CUT, WHITESPACE_CUT

BUDGET = 400
TEXT = "All about my trip to Lisbon, the tram and the pastries by the river. " * 40


def test_a_whole_slice_as_a_piece_is_the_slice_as_its_first_read_showed_it() -> None:
    for rule in (WHITESPACE_CUT, SENTENCE_CUT):
        count = len(transcript.spans(TEXT, BUDGET, rule=rule))
        assert count > 2
        for part in range(count):
            shown = pieces.text(TEXT, BUDGET, part, rule=rule)
            assert shown == transcript.sliced(TEXT, BUDGET, part, rule=rule)


def test_the_halves_of_a_message_within_the_budget_are_marked_at_their_cut_only() -> None:
    content = "One sentence of about forty characters. " * 20
    assert pieces.can_halve(content, len(content), 0, rule=CUT_RULE)
    first, second = (pieces.text(content, len(content), 0, (h,), rule=CUT_RULE) for h in (0, 1))
    assert first.endswith(". […]") and not first.startswith("[…]")
    assert second.startswith("[…] One") and not second.endswith("[…]")
    assert transcript.as_said(first) + " " + transcript.as_said(second) == " ".join(content.split())


def test_the_marker_is_written_as_before_between_sentences_and_says_a_cut_within_one() -> None:
    content = "One. Two three. Four"
    assert transcript.marked(content, 0, len(content)) == content
    assert transcript.marked(content, 5, 15) == "[…] Two three. […]"
    assert transcript.marked(content, 0, 8) == "One. Two [… mid-sentence]"
    assert transcript.marked(content, 9, 20) == "[… mid-sentence] three. Four"
    assert transcript.marked("x" * 10, 4, 6) == "[… mid-sentence] xx [… mid-sentence]"
    said = transcript.as_said(transcript.marked(content, 9, 15))
    assert said == "three."  # a model copying a marker does not say it
