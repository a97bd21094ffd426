"""The offline rules' reading of a spoken correction or restatement: what it states, not how it
is said."""

from __future__ import annotations

import re

# "Sorry, I was wrong: my locker code is 4415, not 4412." states "my locker code is 4415": the
# apology and the value it replaces say how the correction is made, not what is true, and left
# in, they make the fact unlike the one it corrects (both would stay valid).
_CORRECTION_OPENING = re.compile(
    r"^(?:(?:sorry|oops|actually|correction|wait|no)\b[\s,:;!.-]*)+"
    r"(?:(?:I was wrong|I got (?:that|it) wrong|I made a mistake|I misspoke|I meant(?: to say)?"
    r"|I misread(?: (?:the|that|it|my|your) \w+)?)"
    r"\b[\s,:;!.-]*)?",
    re.IGNORECASE,
)
_REPLACED_VALUE = re.compile(r",\s*(?:and\s+)?not\s+[^,;:]{1,40}?(?=[.!]?$)", re.IGNORECASE)

# A lead-in that says a fact is said again, before a comma or a colon: "As I said, …", "Like
# Alice said before, …", "As mentioned, …", "Just to confirm, …", "Remember, …", "Again, …".
# Left in, "As I said, my locker code is 4471." is another fact than "My locker code is 4471."
# (its words differ), stored twice, and a later change of the code updates one copy only.
# Regular-expression source, read without regard to case; the dedup rules strip the same
# lead-ins from the facts they compare (memory/llm/decision_words.py ``OPENER``), which a model
# may have written too ("As the user mentioned earlier, …").
RESTATING = (
    r"(?:as|like)\s+(?:[\w'.-]+\s+){0,3}?"
    r"(?:said|say|says|mentioned|noted|stated|explained|told\s+you|pointed\s+out|know|recall)"
    r"(?:\s+(?:before|earlier|already|previously|above|last\s+time))?"
    r"|(?:just\s+)?to\s+(?:confirm|repeat|reiterate|recap|be\s+clear)"
    r"|(?:just\s+)?(?:as\s+)?(?:a\s+)?(?:quick\s+)?reminder|for\s+the\s+record"
    r"|(?:once\s+)?again|remember|also"
    # "Eve, news on the Mars Festival: …", "Quick update: …": who it is told and what about
    r"|(?:[A-Z][\w'-]*\s*,\s*)?(?:(?:some|quick|good|bad)\s+)?(?:news|update)s?"
    r"(?:\s+(?:on|about|re|regarding|from|for)\b[^,:;]{0,40})?"  # not "News desk:", a subject
)
# One that ends in "that" before the clause it says again: "Remember that my locker code is
# 4471." Only before a clause's first word (a pronoun, a determiner, a name): "Remember that
# restaurant on Main Street?" names a restaurant.
RESTATING_THAT = (
    r"(?:remember|recall|don['\u2019]t\s+forget|do\s+not\s+forget|keep\s+in\s+mind|note"
    r"|just\s+so\s+you\s+know)\s+that\s+"
    r"(?=(?:my|our|your|his|her|their|its|the|this|i|we|you|he|she|they|it)\b|(?-i:[A-Z]))"
)
_RESTATING_OPENING = re.compile(
    rf"^\s*(?:(?:{RESTATING})\s*[,:;]\s*|{RESTATING_THAT})", re.IGNORECASE
)


def without_replaced_value(text: str) -> str:
    """A statement without the value it says it replaces: "Alice's birthday is on March 5, not
    March 3." states "Alice's birthday is on March 5", with or without an opening that says it is
    a correction; the decision rules read it so (the fact keeps its words)."""
    return _REPLACED_VALUE.sub("", text.strip())


def as_corrected(sentence: str) -> str:
    """What a correction or a restatement states, without the opening that says it is one (and,
    for a correction, the value it replaces); any other sentence as it is."""
    rest, corrected = sentence, False
    while True:
        if (opening := _CORRECTION_OPENING.match(rest)) and opening.group(0).strip():
            rest, corrected = rest[opening.end() :], True
        elif lead_in := _RESTATING_OPENING.match(rest):
            rest = rest[lead_in.end() :]
        else:
            break
    if rest is sentence:
        return sentence
    if corrected:
        rest = without_replaced_value(rest)
    rest = rest.strip()
    return rest[:1].upper() + rest[1:] if rest else sentence
