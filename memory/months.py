"""The months' names, and when a written "may" is the month (shared by the relative dates, the
fact reader and the identifiers)."""

from __future__ import annotations

import re
from collections.abc import Sequence

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# "may" is a verb as often as a month ("I may move to Lisbon", "Room 12 may be free"): the month
# only beside a day or a year, or (capitalised) after a word that leads a date ("in May").
_DAY_OR_YEAR = re.compile(r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?|(?:19|20)\d\d")
_YEAR = re.compile(r"(?:19|20)\d\d")
_DATE_LEADS = """
    in on by until till since from before after of early late mid next last this
"""
_DATE_LEAD = frozenset(_DATE_LEADS.split())


def may_is_month(words: Sequence[str], i: int) -> bool:
    """Whether the "may" at ``words[i]`` (words as written, case kept, no punctuation) is the
    month, not the verb. Before a day or a year it is ("May 3", "may 2023"); after a day only
    when a date's lead word comes before the day or a year after "may" ("on 3 may", "3 May
    2023"; not "room 12 may be free"). Capitalised, also right after a date's lead word ("in
    May"), or after a day at the end ("born 3 May")."""
    before = words[i - 1] if i > 0 else ""
    lead = words[i - 2].casefold() if i > 1 else ""
    after = words[i + 1] if i + 1 < len(words) else ""
    if _DAY_OR_YEAR.fullmatch(after):
        return True
    day_before = _DAY_OR_YEAR.fullmatch(before) is not None
    if day_before and (lead in _DATE_LEAD or _YEAR.fullmatch(after)):
        return True
    capital = words[i][:1].isupper()
    return capital and (before.casefold() in _DATE_LEAD or (day_before and not after))
