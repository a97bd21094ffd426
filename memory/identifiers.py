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
- a year after a preposition or a season ("in 2023", "since 1999", "summer 2022");
- a number counting time or occurrences ("4 years", "2 weeks", "5 times").
Any other number counts, a single digit too ("locker 7"): an amount in a question is rare, and a
fact holding the very number asked about is usually the one meant.

What matches (the fact side): a fact holds an identifier when one of its tokens (any token with a
digit, no exclusions: the query already decided) has the same key: case-folded, inner joiners
dropped, so "A-17", "a17" and "A17" match, while "17" does not match "A-17" or "170".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

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
_MAX_IDENTIFIERS = 8  # a query is a question, not a list: more is a paste, not a lookup


def key(token: str) -> str:
    """How identifiers compare: case-folded, inner joiners dropped ("A-17" == "a17")."""
    return "".join(c for c in token.casefold() if c.isalnum())


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


def _is_year(token: str) -> bool:
    return len(token) == 4 and token.isdigit() and 1900 <= int(token) <= 2099


def identifiers(query: str) -> tuple[str, ...]:
    """The query's identifiers as they are written (folded), first occurrence first; see the
    module docstring for what counts and why."""
    tokens = [m.group() for m in _TOKEN.finditer(_fold(query))]
    found: dict[str, str] = {}
    dated: set[int] = set()
    for i, token in enumerate(tokens):
        if not _DIGIT.search(token) or _NOT_A_NAME.fullmatch(token):
            continue
        before = tokens[i - 1] if i > 0 else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token.isdigit():
            if before in _MONTHS or after in _MONTHS or (i - 1 in dated and _is_year(token)):
                dated.add(i)
                continue
            if (_is_year(token) and before in _BEFORE_A_YEAR) or after in _COUNTED:
                continue
        found.setdefault(key(token), token)
    return tuple(found.values())[:_MAX_IDENTIFIERS]


def search_terms(query: str) -> str:
    """What the text search is asked for the query's identifiers: their word parts that hold a
    digit, as every backend's tokenizer splits them ("a-17" -> "17": "a" alone would match any
    fact with the article). Empty when the query has no identifier."""
    parts = (
        part
        for token in identifiers(query)
        for part in re.findall(r"\w+", token)
        if _DIGIT.search(part)
    )
    return " ".join(dict.fromkeys(parts))


@lru_cache(maxsize=65536)
def held_keys(content: str) -> frozenset[str]:
    """The keys of every token with a digit in a fact's text."""
    tokens = (m.group() for m in _TOKEN.finditer(_fold(content)))
    return frozenset(key(token) for token in tokens if _DIGIT.search(token))


def identifier_keys(queries: Sequence[str]) -> frozenset[str]:
    """The keys of every query's identifiers."""
    return frozenset(key(token) for query in queries for token in identifiers(query))


def held(content: str, wanted: frozenset[str]) -> int:
    """How many of the ``wanted`` identifier keys the fact's text holds."""
    return len(wanted & held_keys(content)) if wanted else 0
