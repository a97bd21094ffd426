"""The offline rules' sentences of a message: where one ends (a line wrapped within one is read
with it), and which of them a prompt shows only part of."""

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
    """The sentences of a text. A line break ends one, but for a line that follows one without a
    sentence end in the same paragraph, not a list's item: the two are one sentence wrapped at a
    width ("My dog is named\nRex and he is 4 years old."), read whole. Read as two, the second
    had lost its subject and read as a statement about the world, the agent's (r249, r251)."""
    out: list[str] = []
    before = ""  # the last line of the paragraph so far
    for line in (line.strip() for line in text.splitlines()):
        joined: list[str] = []
        for part in (p.strip() for p in _SENTENCE_END.split(line)):
            if part and joined and _ABBREVIATION.search(joined[-1]):
                joined[-1] = f"{joined[-1]} {part}"
            elif part:
                joined.append(part)
        wrapped = bool(before) and not _ENDS_A_LINE.search(before) and not _ITEM.match(line)
        if wrapped and out and joined:
            out[-1] = f"{out[-1]} {joined.pop(0)}"
        out += joined
        before = line
    return out


def said_sentences(content: str) -> list[str]:
    """The sentences of a message as its prompt shows it, without those it shows only a part
    of: the words before the first sentence end of a slice that begins within a sentence, and
    after the last of one that ends within it (memory/transcript.py ``mid_sentence``). Slices do
    not overlap, so no prompt holds the whole sentence: read alone, "named Rex and he is 4 years
    old." has no "my", reads as a statement about the world, and became the agent's, which every
    user reads (r249); "Erin's dog is named" replaced a true fact. Slices are cut at sentence
    ends where they can; where one had none near its bound, its fragment makes no fact: a lost
    detail is safer than a wrong one, or one in the wrong scope."""
    begins, body, ends = transcript.mid_sentence(content)
    found = sentences(body)
    return found[1 if begins else 0 : len(found) - 1 if ends else len(found)]
