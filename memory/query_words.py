"""The text side of a search query: its content words (stop words dropped), what FTS5 and the
shared BM25 are asked for (memory.rag)."""

from __future__ import annotations

import re
from itertools import accumulate

from memory.identifiers import identifiers, key, search_terms

_WORD = re.compile(r"\w+")
# Function words, question words and the fragments of English contractions ("Caroline's" is
# tokenised as "caroline" + "s"). Queries are questions and facts are statements, so on the text
# side these words only match noise (and they have the longest posting lists).
_STOP_WORDS = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could d did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just ll m me might more most my myself no nor not now of off on once only or other our ours
    ourselves out over own re s same she should so some such t than that the their theirs them
    themselves then there these they this those through to too under until up ve very was we were
    what when where which while who whom whose why will with would you your yours yourself
    yourselves
"""
STOP_WORDS = frozenset(_STOP_WORDS.split())


def content_words(query: str) -> str:
    """The query's words without stop words, for the text search (all words if none is left)."""
    words = _WORD.findall(query)
    kept = [w for w in words if w.casefold() not in STOP_WORDS]
    return " ".join(kept or words)


# How a long number is written besides itself: an amount in thousands groups ("$55,007"), up to
# a billion (a longer one is seldom an amount someone tells); a phone number in its usual groups
# ("555-1234", "555-123-4567", "1-555-123-4567"). Any other split is arbitrary: a 10-digit
# phone number is never written "5,551,234,567".
_MAX_AMOUNT_DIGITS = 9
_PHONE_GROUPS = {7: (3, 4), 10: (3, 3, 4), 11: (1, 3, 3, 4)}


def _thousands(digits: str) -> list[str]:
    """A number's thousands groups ("55007" -> "55", "007")."""
    head = len(digits) % 3 or 3
    return [digits[:head], *(digits[i : i + 3] for i in range(head, len(digits), 3))]


def _split(digits: str, sizes: tuple[int, ...]) -> list[str]:
    """The digits cut into groups of these sizes (their sum is the digits' length)."""
    ends = list(accumulate(sizes))
    return [digits[end - size : end] for size, end in zip(sizes, ends, strict=True)]


def _groupings(digits: str) -> list[list[str]]:
    """The groups a long number (4 digits or more) is usually written in: see _PHONE_GROUPS."""
    found = [_thousands(digits)] if len(digits) <= _MAX_AMOUNT_DIGITS else []
    if sizes := _PHONE_GROUPS.get(len(digits)):
        found.append(_split(digits, sizes))
    return found


def _other_parts(code: str) -> list[list[str]]:
    """A code's key in the parts it may be written in apart: its letters and digits ("a17" ->
    "a", "17"), a long number's usual groupings (``_groupings``), none for a short number."""
    if not code.isdigit():
        return [re.findall(r"\d+|[^\W\d_]+", code)]
    return _groupings(code) if len(code) > 3 else []


def phrases(query: str) -> list[str]:
    """The other spellings of the query's identifiers as phrases (memory.store.rules.text
    .query_parts: words joined by hyphens, found next to each other in a fact): a code's letters
    and digits apart ("A17" -> "a-17", found in "A-17" and "A 17"), a long number's usual groups
    ("55007" -> "55-007", found in "$55,007"; "5551234567" -> "555-123-4567"), and the token's
    own words ("52-113"). As phrases, never alone: a bare "17" or "007" fills the store's
    candidate cap on a big store, and the fact holding the code is never scored."""
    found: list[str] = []
    for token in identifiers(query):
        spellings = [*_other_parts(key(token)), _WORD.findall(token)]
        found += ["-".join(words) for words in spellings if len(words) > 1]
    return list(dict.fromkeys(found))


def text_queries(query: str) -> list[str]:
    """What the text half of a search asks the store for one query: its content words, and its
    identifiers' terms on their own (``memory.identifiers``) with their other spellings as
    phrases (``phrases``) when it has any. A store ranks its matches within a candidate cap
    (newest first on SQLite and PostgreSQL), so among 10,000 facts holding "favourite number"
    the one holding "4711" may never be scored; asked alone, the rare token matches only the
    facts that hold it."""
    words = content_words(query)
    exact = " ".join(dict.fromkeys([*search_terms(query).split(), *phrases(query)]))
    return [words, exact] if exact and exact != words else [words]
