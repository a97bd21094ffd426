"""The offline rules' sentences of a message: where one ends, and which of them a prompt shows
only part of, or may have begun on the line before."""

from __future__ import annotations

import re

from memory import transcript

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# A title or "e.g." ends in a period that ends no sentence: "My dentist is Dr. Okonkwo." is one.
# "St." and "Mt." only before a name ("in St. Louis"): after one they end a street's ("Baker St.
# My dog…"). Not "Jr." nor "Sr.", which close a name and often the sentence.
_ABBREVIATION = re.compile(
    r"(?i)(?:^|\s)(?:dr|mr|mrs|ms|mx|prof|vs|e\.g|i\.e)\.$"
    r"|(?:^|\s)(?-i:[a-z]\w*|[,;(])\s+(?:st|mt)\.$|^(?:st|mt)\.$"
)
# A line that ends a sentence, or introduces what follows (a heading with a colon, a list), and
# a line that is a list's item: the next line, or this one, begins its own.
_ENDS_A_LINE = re.compile(r"[.!?:;…)\]\"'”’]$")
_ITEM = re.compile(r"^(?:[-*•–—>#]|\d{1,3}[.)]\s)")


def sentences(text: str) -> list[str]:
    return [s for s, _ in _with_lines(text)]


def _with_lines(text: str) -> list[tuple[str, bool]]:
    """(sentence, whether it may go on one begun on the line before): the first of a line that
    follows a line without a sentence end, in the same paragraph ("My dog is named\\nRex and he
    is 4 years old.", text wrapped at a width). A line break always ends a sentence here."""
    out: list[tuple[str, bool]] = []
    before = ""  # the last line of the paragraph so far
    for line in (line.strip() for line in text.splitlines()):
        joined: list[str] = []
        for part in (p.strip() for p in _SENTENCE_END.split(line)):
            if part and joined and _ABBREVIATION.search(joined[-1]):
                joined[-1] = f"{joined[-1]} {part}"
            elif part:
                joined.append(part)
        goes_on = bool(before) and not _ENDS_A_LINE.search(before) and not _ITEM.match(line)
        out += [(s, goes_on and n == 0) for n, s in enumerate(joined)]
        before = line
    return out


def said_sentences(content: str) -> list[tuple[str, bool]]:
    """The sentences of a message as its prompt shows it, each with whether it may go on one
    begun on the line before (its subject there: "Rex and he is 4 years old." is no statement
    about the world), without those it shows only a part of: the words before the first
    sentence end of a slice that begins within a sentence, and after the last of one that ends
    within it (memory/transcript.py ``mid_sentence``). Slices do not overlap, so no prompt holds
    the whole sentence: read alone, "named Rex and he is 4 years old." has no "my", reads as a
    statement about the world, and became the agent's, which every user reads (r249); "Erin's
    dog is named" replaced a true fact. Slices are cut at sentence ends where they can; where
    one had none near its bound, its fragment makes no fact: a lost detail is safer than a
    wrong one, or one in the wrong scope."""
    begins, body, ends = transcript.mid_sentence(content)
    found = _with_lines(body)
    return found[1 if begins else 0 : len(found) - 1 if ends else len(found)]
