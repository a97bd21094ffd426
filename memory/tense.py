"""The tense of a fact sentence, coarsely, from closed word lists (memory.dates uses it to read a
bare "on Monday" or "in two days"): "future" when it has a future marker (will, 'll, going to,
plans to, a present progressive such as "is meeting"), "past" when it has a past form (was, went,
a verb in -ed that is not an adjective after "is"/"so"…), None when it has neither or both."""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["Tense", "sentence_tense"]

Tense = Literal["future", "past"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_FUTURE = re.compile(
    r"\b(?:will|shall|won['’]t|gonna|going\s+to|plans?\s+to|planning\s+to|intends?\s+to|"
    r"hopes?\s+to|wants?\s+to|upcoming)\b|['’]ll\b"
    # "is meeting Bob on Friday": a present progressive with a day is an arrangement
    r"|\b(?:am|is|are|['’]m|['’]re)\s+(?!(?:morning|evening|nothing|something|everything|"
    r"anything|during|interesting|amazing|boring)\b)\w+ing\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?:was|were|did|didn['’]t|had|went|got|came|met|saw|took|made|told|said|bought|ran|ate|"
    r"began|left|found|gave|thought|knew|won|lost|spent|sent|wrote|held|kept|brought|heard|paid|"
    r"sat|stood|flew|drove|swam|sang|taught|caught|fought|built|chose|broke|grew|threw|rode|wore|"
    r"forgot|became|slept)\b",
    re.IGNORECASE,
)
_ED_WORD = re.compile(r"\b(\w+)\s+(\w{3,}ed)\b|^(\w{3,}ed)\b", re.IGNORECASE)
# "-ed" words that are adjectives or not verbs at all ("excited to go on Monday" is future).
_NOT_PAST_ED = _words(
    "excited interested tired married scheduled supposed based named related engaged "
    "worried pleased bored scared thrilled delighted involved located dedicated obsessed "
    "motivated inspired determined prepared expected hundred sacred naked wicked beloved "
    "talented skilled allowed required planned booked set"
)
_BE_BEFORE_ED = _words("am is are 'm ’m 're ’re be been being get gets so very really too")


def sentence_tense(text: str) -> Tense | None:
    """The sentence's tense, "future", "past" or None (neither or both clear): it decides a bare
    "on Monday" and "in N days"."""
    future = _FUTURE.search(text) is not None
    past = _PAST.search(text) is not None
    if not past:
        for m in _ED_WORD.finditer(text):
            before, word = (m.group(1) or "").lower(), (m.group(2) or m.group(3)).lower()
            if word.endswith("eed") or word in _NOT_PAST_ED or before in _BE_BEFORE_ED:
                continue
            past = True
            break
    if future == past:
        return None
    return "future" if future else "past"
