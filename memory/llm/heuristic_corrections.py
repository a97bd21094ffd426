"""The offline rules' reading of a spoken correction: what it states, not how it is said."""

from __future__ import annotations

import re

# "Sorry, I was wrong: my locker code is 4415, not 4412." states "my locker code is 4415": the
# apology and the value it replaces say how the correction is made, not what is true, and left
# in, they make the fact unlike the one it corrects (both would stay valid).
_CORRECTION_OPENING = re.compile(
    r"^(?:(?:sorry|oops|actually|correction|wait|no)\b[\s,:;!.-]*)+"
    r"(?:(?:I was wrong|I got (?:that|it) wrong|I made a mistake|I misspoke|I meant(?: to say)?)"
    r"\b[\s,:;!.-]*)?",
    re.IGNORECASE,
)
_REPLACED_VALUE = re.compile(r",\s*(?:and\s+)?not\s+[^,;:]{1,40}?(?=[.!]?$)", re.IGNORECASE)


def as_corrected(sentence: str) -> str:
    """What a correction states, without its opening and the value it replaces; any other
    sentence as it is."""
    opening = _CORRECTION_OPENING.match(sentence)
    if opening is None or not opening.group(0).strip():
        return sentence
    rest = _REPLACED_VALUE.sub("", sentence[opening.end() :]).strip()
    return rest[:1].upper() + rest[1:] if rest else sentence
