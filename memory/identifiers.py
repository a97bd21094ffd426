"""Identifiers in a search query: the tokens that name one thing exactly ("favourite number 4711",
"locker 17", "order A-17", "flight LH400", "ticket #52-113"), which search ranks by exact match.

Why a rule of its own: a sentence embedder reads "locker 17" and "locker 18" as the same words (on
10,000 facts "My favourite number {i} is {v}." MiniLM puts every fact at about the same point), and
a text search on a common word ("number") fills its candidate cap before it reaches the one fact
holding the rare token. So a query's identifiers get their own text search (``search_terms``) and
the candidates holding one rank above those that don't (``memory.fusion.with_identifier_tier``).

What counts (the query side): a token (letters and digits, joined inside by ``- _ / . :`` or by a
thousands comma, "4,711") that holds a digit. A word without a digit never does: telling a
name from a common noun is the text search's BM25 job, and a boost there would only reorder what
BM25 already ranks. Numbers that are more often a date, a time or an amount than a name don't
count either, so an ordinary question ("What did Maria do on May 3, 2023?", "Where did Caroline
move from 4 years ago?") has none and ranks exactly as before:
- ordinals ("18th"), times ("10:30", "7pm"), decades ("1990s"), dates ("2023-05-01", "3/5/2023");
- a number beside a month name ("May 3", "3 June", and the year after it: "October 13, 2023");
  "may" only where it is no verb ("Room 12 may be free" holds 12: memory.months.may_is_month);
- a year after a preposition or a season ("in 2023", "since 1999", "summer 2022");
- a number counting time or occurrences ("4 years", "2 weeks", "5 times");
- a small number (up to 3 digits) counting the plural noun after it ("Alice's 2 dogs", "the 3
  kids"): the answer rarely repeats the count, and many unrelated facts hold the digit; but
  not after a word for a numbered thing ("room 12 keys", "flight 12 leaves": room 12).
Any other number counts, a single digit too ("locker 7"): an amount in a question is rare, and a
fact holding the very number asked about is usually the one meant.

What matches (the fact side): a fact holds an identifier when one of its tokens (any token with a
digit but a number inside a date: formed facts carry absolute dates, "on 2 May 2023") has the
same key: case-folded, inner joiners dropped, so "A-17", "a17" and "A17" match, while "17" does
not match "A-17" or "170". The text search is asked for the key alone and for the token's other
spellings as phrases, never for its parts alone ("A-17" as "a17" and "a" "17" next to each other,
"55007" also as "55" "007" next to each other), so the fact is found whatever its joiners.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

from memory.months import may_is_month

# Letters and digits, joined inside by - _ / . : (codes, versions, hosts) or a thousands comma.
_TOKEN = re.compile(r"[^\W_]+(?:(?:[-_/.:]|(?<=\d),(?=\d{3}\b))[^\W_]+)*")
_DIGIT = re.compile(r"\d")
_NOT_A_NAME = re.compile(
    r"\d+(?:st|nd|rd|th)"  # ordinals
    r"|\d{1,2}(?::\d{2}){1,2}(?:am|pm)?|\d{1,2}(?:am|pm)"  # times of day
    r"|(?:\d{2}|\d{4})s"  # decades
    r"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.](?:\d{2}|\d{4})"  # dates
)
_MONTH_NAMES = """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec
"""
_MONTHS = frozenset(_MONTH_NAMES.split())
_YEAR_OPENERS = """
    in since before after until till by from during of to around circa early late mid
    spring summer autumn fall winter year
"""
_BEFORE_A_YEAR = frozenset(_YEAR_OPENERS.split())
_COUNTED_UNITS = """
    second seconds minute minutes hour hours day days week weeks month months year years
    decade decades time times
"""
_COUNTED = frozenset(_COUNTED_UNITS.split())
# A count before a plural noun ("2 dogs") has at most this many digits; a longer number is a name.
_MAX_COUNT_DIGITS = 3
_NOT_PLURAL = ("ss", "us", "is", "ous")  # "boss", "bus", "analysis", "famous"
_NOT_A_NOUN = frozenset(
    ("does", "has", "was", "is", "this", "its", "yours", "ours", "hers", "theirs")
)
# Things named by a number after their word: the number is which one, never how many.
_NUMBERED_THINGS = """
    room flight gate seat platform bus line apartment apt unit locker order ticket table track
    terminal floor suite lot space box route train level row section lane pier berth cabin door
    building block ward bed court bay dock stop exit channel case invoice account number
    version release chapter page step item
"""
_NUMBERED = frozenset(_NUMBERED_THINGS.split())
_MAX_IDENTIFIERS = 8  # a query is a question, not a list: more is a paste, not a lookup


def key(token: str) -> str:
    """How identifiers compare: case-folded, inner joiners dropped ("A-17" == "a17")."""
    return "".join(c for c in token.casefold() if c.isalnum())


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _is_year(token: str) -> bool:
    return len(token) == 4 and token.isdigit() and 1900 <= int(token) <= 2099


def _written(text: str) -> list[str]:
    """The text's tokens with their case, which tells the month "May" from the verb."""
    return [m.group() for m in _TOKEN.finditer(unicodedata.normalize("NFKC", text))]


def _month(written: Sequence[str], i: int) -> bool:
    """Whether ``written[i]`` names a month: "may" only where it is no verb ("Room 12 may be
    free": memory.months.may_is_month)."""
    if not 0 <= i < len(written):
        return False
    folded = _fold(written[i])
    return folded in _MONTHS and (folded != "may" or may_is_month(written, i))


def _dated(written: Sequence[str]) -> set[int]:
    """The positions of the numbers that are part of a date: beside a month name ("May 3",
    "3 June"), or a year right after such a number ("October 13, 2023")."""
    dated: set[int] = set()
    for i, token in enumerate(written):
        if not token.isdigit():
            continue
        if _month(written, i - 1) or _month(written, i + 1) or (i - 1 in dated and _is_year(token)):
            dated.add(i)
    return dated


def _counts_a_noun(before: str, number: str, after: str) -> bool:
    """A small number before a plural noun counts things ("Alice's 2 dogs", "the 3 kids"): the
    fact that answers rarely repeats the count, and many unrelated facts hold the digit. Not
    one right after a word for a numbered thing: "room 12 keys", "flight 12 leaves" ask about
    room 12, flight 12."""
    return (
        before not in _NUMBERED
        and len(number) <= _MAX_COUNT_DIGITS
        and after.isalpha()
        and len(after) > 3
        and after.endswith("s")
        and not after.endswith(_NOT_PLURAL)
        and after not in _NOT_A_NOUN
    )


def identifiers(query: str) -> tuple[str, ...]:
    """The query's identifiers as they are written (folded), first occurrence first; see the
    module docstring for what counts and why."""
    written = _written(query)
    tokens = [_fold(token) for token in written]
    dated = _dated(written)
    found: dict[str, str] = {}
    for i, token in enumerate(tokens):
        if not _DIGIT.search(token) or _NOT_A_NAME.fullmatch(token) or i in dated:
            continue
        before = tokens[i - 1] if i > 0 else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.isdigit() and (
            (_is_year(token) and before in _BEFORE_A_YEAR)
            or after in _COUNTED
            or _counts_a_noun(before, token, after)
        ):
            continue
        found.setdefault(key(token), token)
    return tuple(found.values())[:_MAX_IDENTIFIERS]


def search_terms(query: str) -> str:
    """What the text search is asked for the query's identifiers as words alone: the key of each
    ("a-17" and "a17" -> "a17"), how a fact that wrote it without joiners is indexed (``\\w+``
    words, shared by every backend: memory.store.rules.text). Never a multi-part token's parts
    ("A-17" -> "a", "17"; "$55,007" -> "55", "007"; "COVID-19" -> "covid", "19"): OR-ed into the
    rare token's search, those common words would fill its candidate cap on a big store with
    newer facts holding them, and the fact holding the code would never be scored (h210, h224).
    A fact that wrote the parts apart is found by them as a phrase, next to each other
    (memory.query_words.phrases). Empty when the query has no identifier."""
    return " ".join(dict.fromkeys(key(token) for token in identifiers(query)))


@lru_cache(maxsize=65536)
def held_keys(content: str) -> frozenset[str]:
    """The keys of every token with a digit in a fact's text, but the numbers inside a date:
    formed facts carry absolute dates ("on 2 May 2023"), which name no thing."""
    tokens = _written(content)
    dated = _dated(tokens)
    return frozenset(
        key(token) for i, token in enumerate(tokens) if _DIGIT.search(token) and i not in dated
    )


def identifier_keys(queries: Sequence[str]) -> frozenset[str]:
    """The keys of every query's identifiers."""
    return frozenset(key(token) for query in queries for token in identifiers(query))


def held(content: str, wanted: frozenset[str]) -> int:
    """How many of the ``wanted`` identifier keys the fact's text holds."""
    return len(wanted & held_keys(content)) if wanted else 0
