"""Relative time expressions in a fact, rewritten as absolute dates (issue 20: facts that stand on
their own in time).

"I moved to Berlin last month" is true on the day it was said and wrong a month later. The
formation pipeline rewrites such expressions against the moment the fact was said (its source
message's timestamp, never the wall clock) so that a fact read a year later still answers "when".
Pure and deterministic: no I/O, no clock; the same text and ``said_at`` always give the same output.

Formats (one each, short, unambiguous in every locale; no leading zero, English month names):
- a day:     "on 7 May 2023"  ("the night of 6 May 2023" with a part of the day)
- a week:    "the week before 8 May 2023" / "the week after …" / "the week of …"
- a weekend: "the weekend before 8 May 2023" / "the weekend after …" /
             "the weekend of 13 May 2023"
             (this weekend: the Saturday of said_at's Monday-to-Sunday week)
- a month:   "in April 2023";  a year: "in 2022"
- a season:  "in summer 2022", "in winter 2022–2023" (northern meteorological seasons: last
             summer is the latest one over before said_at's month, next summer the first to start
             after it, this summer the one of said_at's year)
- hedged:    "about three weeks ago" → "around 16 April 2023" (about/around/roughly/approximately)

The leading "on"/"in" is left out where the sentence already has a preposition ("since
yesterday" → "since 6 May 2023", never "on on"), before a possessive ("yesterday's" →
"6 May 2023's") and when the expression is the subject at the start of a sentence or clause
("Yesterday was fun" → "6 May 2023 was fun"). A capital at the start of the expression is kept.

Day rules, counted in said_at's own calendar date, in the time zone of its offset. The pipeline
passes the speaker's local time: the cited message's ``created_at`` in the UTC offset it was sent
with (``StoredMessage.utc_offset_minutes``, ``in_offset``), so "tomorrow" said at 22:30 -05:00 on
7 May is 8 May, though it was 03:30 UTC on the 8th. A message stored before the offset was kept
(None) or sent in UTC is counted in UTC.
- yesterday / today / tomorrow / the day before yesterday / the day after tomorrow; tonight, this
  morning/afternoon/evening, last night, and "<day> morning/afternoon/evening/night".
- "N days/weeks ago", "in N days/weeks", "N days/weeks from now" (months and years likewise give a
  month or a year): N is digits, one..twelve, fifteen, twenty, thirty, "a"/"an" or "a couple
  (of)". "a few", "several", "recently", "the other day", "soon" are vague: left as said.
  "in N …" is left alone in a past-tense sentence ("ran it in two days" is a duration), and
  "in a/one day/week…" unless the sentence is future ("runs 50 km in a week").
- last <weekday>: the nearest such day strictly before said_at (said on a Monday, "last Monday" is
  7 days before); next <weekday>: the nearest strictly after (7 days after on the same weekday);
  this <weekday>: that day of said_at's Monday-to-Sunday week; "this past"/"this coming" are
  last/next; Mon, Tue(s), Thu(rs), Fri are read too. "on <weekday>" alone is resolved only when
  the sentence's tense is clear (memory.tense): future (will, 'll, going to, plans to, "is
  meeting"…) → next, past (was, went, -ed verbs…) → last; otherwise, and for "Mondays"/"every
  Monday", it is left as said.
Left as said: expressions after a determiner ("the last week", "my next year"), followed by "of"
("last week of May"), directly followed by a date ("Monday, 8 May"), hedged by almost/nearly/over/
than/at least, in ranges ("two or three days ago"), a capitalised expression inside a sentence
(a title: "the Today show"), and anything whose result would fall outside years 1–9999.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone

from memory.months import MONTHS
from memory.tense import Tense, sentence_tense

__all__ = [
    "format_day",
    "has_relative_date",
    "in_offset",
    "offset_minutes",
    "resolve_relative_dates",
]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WORD_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "a": 1,
    "an": 1,
}

# Abbreviations only where they cannot be an ordinary word ("sun", "sat", "wed" can).
_WD = "|".join(_WEEKDAYS) + r"|mon|tues?|thu(?:rs?)?|fri"
_SEASON_START = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_POD = r"(?:\s+(?P<{0}>morning|afternoon|evening|night))?"
_NUM = r"(?P<{0}>\d{{1,3}}|(?:a\s+)?couple(?:\s+of)?|" + "|".join(_WORD_NUMBERS) + ")"
_UNIT = r"\s+(?P<{0}>day|week|month|year)s?"
_HEDGE = r"(?:(?P<{0}>about|around|roughly|approximately)\s+)?"
_MONTH_NAMES = "|".join(MONTHS) + r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec"
# A date written right after the expression ("Monday, 8 May"): it already says when.
_NO_DATE_AHEAD = (
    r"(?!\s*[,(]?\s*(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:"
    + _MONTH_NAMES
    + r")\b|(?:"
    + _MONTH_NAMES
    + r")\.?\s+\d))"
)
_NOT_OF = r"(?!\s+of\b)"
# Hedges that make a count vague, and ranges ("two or three days ago", "2 to 3 weeks").
_NOT_VAGUE = (
    r"(?<!\bor\s)(?<!\bto\s)(?<!\band\s)(?<!almost\s)(?<!nearly\s)(?<!\bover\s)(?<!\bthan\s)"
    r"(?<!least\s)(?<!under\s)"
)

_RULES: tuple[tuple[str, str], ...] = (
    ("twoday", r"the\s+day\s+(?P<twoday_dir>before\s+yesterday|after\s+tomorrow)" + _NO_DATE_AHEAD),
    ("ago", _NOT_VAGUE + _HEDGE.format("ago_hedge") + r"(?:(?:just|only)\s+)?"
     + _NUM.format("ago_n") + _UNIT.format("ago_unit") + r"\s+ago"),
    ("fromnow", _NOT_VAGUE + _NUM.format("fromnow_n") + _UNIT.format("fromnow_unit")
     + r"\s+from\s+(?:now|today)"),
    ("in", r"in\s+" + _HEDGE.format("in_hedge") + _NUM.format("in_n") + _UNIT.format("in_unit")
     + r"(?:['’]?\s+time)?"),
    ("day", r"(?P<day_word>yesterday|today|tomorrow)" + _POD.format("day_pod") + _NO_DATE_AHEAD),
    ("tonight", r"tonight" + _NO_DATE_AHEAD),
    ("thispod", r"this\s+(?P<thispod_pod>morning|afternoon|evening)"),
    ("lastnight", r"last\s+night" + _NOT_OF),
    ("weekday", r"(?P<weekday_rel>this\s+past|this\s+coming|last|next|this)\s+(?P<weekday_day>"
     + _WD + ")" + _POD.format("weekday_pod") + _NOT_OF + _NO_DATE_AHEAD),
    ("on", r"on\s+(?P<on_day>" + _WD + ")" + _POD.format("on_pod") + _NO_DATE_AHEAD),
    ("span", r"(?P<span_rel>this\s+past|this\s+coming|last|next|this)\s+"
     r"(?P<span_unit>weekend|week|month|year)" + _NOT_OF),
    ("season", r"(?P<season_rel>this\s+past|this\s+coming|last|next|this)\s+"
     r"(?P<season_name>spring|summer|autumn|fall|winter)" + _NOT_OF),
)  # fmt: skip
_PATTERN = re.compile(
    r"(?<![\w'’-])(?:" + "|".join(f"(?P<{n}>{p})" for n, p in _RULES) + r")(?![\w-])",
    re.IGNORECASE,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_PREPOSITIONS = _words(
    "on since until till by before after from for of to through at during starting as in into "
    "between than within"
)
_DETERMINERS = _words("the a an my your his her its our their this every each")
_SUBJECT_VERB = re.compile(
    r"\s+(?:is|was|will|would|has|had|seems|seemed|feels|felt|looks|looked|works|worked|suits|"
    r"sounds|sounded)\b",
    re.IGNORECASE,
)
_POSSESSIVE = re.compile(r"['’]s\b", re.IGNORECASE)
# "today's world": today as "nowadays", not a date.
_NOWADAYS = re.compile(
    r"['’]s\s+(?:world|society|age|generation|youth|kids|children|culture|economy|market|"
    r"standards|technology|times|climate|media)\b",
    re.IGNORECASE,
)
# Where a sentence (or a list item) starts. Not after a quote: a capital there is a title
# ("the song 'Yesterday'").
_SENTENCE_END = ".!?:;\n-–—•*"


@dataclass(frozen=True)
class _Resolved:
    core: str  # "7 May 2023", "the night of 6 May 2023", "April 2023", …
    kind: str  # "day" (prefix "on"), "period" (prefix "in"), "week" (no prefix)
    forced: str | None = None  # the prefix that replaces a preposition or hedge the match consumed


def format_day(day: date) -> str:
    """``7 May 2023``: day, English month name, year (no leading zero, locale-free)."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def _number(word: str) -> int:
    word = " ".join(word.lower().split())
    if word[0].isdigit():
        return int(word)
    if "couple" in word:
        return 2
    return _WORD_NUMBERS[word]


def _months_from(day: date, months: int) -> str:
    index = day.year * 12 + day.month - 1 + months
    year, month0 = divmod(index, 12)
    if not 1 <= year <= 9999:
        raise ValueError("out of the calendar")
    return f"{MONTHS[month0]} {year}"


def _year(day: date, years: int) -> str:
    year = day.year + years
    if not 1 <= year <= 9999:
        raise ValueError("out of the calendar")
    return str(year)


def _day(day: date, days: int, pod: str | None = None) -> _Resolved:
    text = format_day(day + timedelta(days=days))
    return _Resolved(f"the {pod.lower()} of {text}" if pod else text, "day")


def _count(
    day: date, n: int, unit: str, sign: int, hedge: str | None, forced: str | None
) -> _Resolved:
    unit = unit.lower()
    if unit in ("day", "week"):
        resolved = _day(day, sign * n * (7 if unit == "week" else 1))
    elif unit == "month":
        resolved = _Resolved(_months_from(day, sign * n), "period")
    else:
        resolved = _Resolved(_year(day, sign * n), "period")
    if hedge:
        return _Resolved(resolved.core, resolved.kind, "around ")
    if forced is not None and resolved.kind == "period":
        forced = "in "
    return _Resolved(resolved.core, resolved.kind, forced)


def _weekday(day: date, rel: str, name: str, pod: str | None) -> _Resolved:
    target = [w[:3] for w in _WEEKDAYS].index(name.lower()[:3])
    rel = " ".join(rel.lower().split())
    if rel in ("last", "this past"):
        offset = -((day.weekday() - target - 1) % 7 + 1)
    elif rel in ("next", "this coming"):
        offset = (target - day.weekday() - 1) % 7 + 1
    else:  # this: the same Monday-to-Sunday week
        offset = target - day.weekday()
    return _day(day, offset, pod)


def _span(day: date, rel: str, unit: str) -> _Resolved | None:
    rel = " ".join(rel.lower().split())
    unit = unit.lower()
    step = {"last": -1, "this past": -1, "next": 1, "this coming": 1, "this": 0}[rel]
    if unit in ("month", "year"):
        if rel in ("this past", "this coming"):  # "this past year": the last twelve months
            return None
        if unit == "month":
            return _Resolved(_months_from(day, step), "period")
        return _Resolved(_year(day, step), "period")
    if step == 0 and unit == "weekend":
        saturday = day - timedelta(days=day.weekday()) + timedelta(days=5)
        return _Resolved(f"the weekend of {format_day(saturday)}", "week")
    where = {-1: "before", 0: "of", 1: "after"}[step]
    return _Resolved(f"the {unit} {where} {format_day(day)}", "week")


def _season(day: date, rel: str, name: str) -> _Resolved:
    """Northern meteorological seasons, counted in whole months (winter: December to February)."""
    name = name.lower()
    start0 = _SEASON_START[name] - 1
    month = day.year * 12 + day.month - 1
    rel = " ".join(rel.lower().split())
    if rel in ("last", "this past"):  # the latest one over before said_at's month
        year = (month - 3 - start0) // 12
    elif rel in ("next", "this coming"):  # the first one to start after said_at's month
        year = (month - start0) // 12 + 1
    else:  # this: said_at's year's (the winter said_at is in, in January and February)
        year = day.year - 1 if name == "winter" and day.month < 3 else day.year
    if not 1 <= year <= 9998:
        raise ValueError("out of the calendar")
    when = f"{year}–{year + 1}" if name == "winter" else str(year)
    return _Resolved(f"{name} {when}", "period")


def _resolve(m: re.Match[str], day: date, tense: Tense | None) -> _Resolved | None:
    rule = m.lastgroup
    g = m.group
    if rule == "twoday":
        return _day(day, -2 if g("twoday_dir").lower().startswith("before") else 2)
    if rule == "ago":
        return _count(day, _number(g("ago_n")), g("ago_unit"), -1, g("ago_hedge"), None)
    if rule == "fromnow":
        return _count(day, _number(g("fromnow_n")), g("fromnow_unit"), 1, None, None)
    if rule == "in":
        single = g("in_n").lower() in ("a", "an", "one")
        if tense == "past" or (single and tense != "future"):
            return None  # "ran it in two days", "50 km in a week": a duration
        return _count(day, _number(g("in_n")), g("in_unit"), 1, g("in_hedge"), "on ")
    if rule == "day":
        offset = {"yesterday": -1, "today": 0, "tomorrow": 1}[g("day_word").lower()]
        if offset == 0 and _NOWADAYS.match(m.string, m.end()):
            return None
        return _day(day, offset, g("day_pod"))
    if rule == "tonight":
        return _day(day, 0, "night")
    if rule == "thispod":
        return _day(day, 0, g("thispod_pod"))
    if rule == "lastnight":
        return _day(day, -1, "night")
    if rule == "weekday":
        return _weekday(day, g("weekday_rel"), g("weekday_day"), g("weekday_pod"))
    if rule == "on":
        if tense is None:
            return None
        rel = "next" if tense == "future" else "last"
        resolved = _weekday(day, rel, g("on_day"), g("on_pod"))
        return _Resolved(resolved.core, resolved.kind, "on ")
    if rule == "season":
        return _season(day, g("season_rel"), g("season_name"))
    return _span(day, g("span_rel"), g("span_unit"))


def _previous_word(text: str, start: int) -> str:
    words = re.findall(r"[\w'’]+", text[max(0, start - 40) : start])
    return words[-1].lower() if words else ""


def _at_sentence_start(text: str, start: int, *, clause: bool = False) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in _SENTENCE_END or (clause and before[-1] == ",")


def _replacement(m: re.Match[str], day: date, tense: Tense | None) -> str | None:
    text, start, end = m.string, m.start(), m.end()
    at_start = _at_sentence_start(text, start)
    if m.group()[0].isupper() and not at_start:
        return None  # a title inside a sentence: "the Today show", "Last Week Tonight"
    prev = _previous_word(text, start)
    if m.lastgroup in ("weekday", "span", "lastnight") and prev in _DETERMINERS:
        return None  # "the last week", "my next year": a duration or an ordinal, not a date
    try:
        resolved = _resolve(m, day, tense)
    except (ValueError, OverflowError):  # before year 1 or after 9999
        return None
    if resolved is None:
        return None
    if resolved.forced is not None:
        prefix = resolved.forced
    elif (
        _POSSESSIVE.match(text, end)
        or (_at_sentence_start(text, start, clause=True) and _SUBJECT_VERB.match(text, end))
        or prev in _PREPOSITIONS
    ):
        prefix = ""  # "since yesterday", "yesterday's", "Yesterday was", "Bob, tomorrow is": as is
    elif resolved.kind == "week":
        prefix = "in " if prev in ("later", "earlier") else ""
    else:
        prefix = "on " if resolved.kind == "day" else "in "
    out = prefix + resolved.core
    if m.group()[0].isupper():
        out = out[0].upper() + out[1:]
    return out


def offset_minutes(at: datetime) -> int | None:
    """``at``'s offset from UTC in whole minutes (what a stored message keeps of its sender's
    clock, within ±1439); None for a naive datetime."""
    offset = at.utcoffset()
    return None if offset is None else int(offset.total_seconds() / 60)


def in_offset(at: datetime, minutes: int | None) -> datetime:
    """The instant ``at`` on the clock ``minutes`` from UTC: the speaker's local time, whose
    calendar date a relative date counts from. UTC for None (stored before offsets were kept)
    and 0."""
    if not minutes:
        return at.astimezone(UTC)
    return at.astimezone(timezone(timedelta(minutes=minutes)))


def resolve_relative_dates(text: str, said_at: datetime) -> str:
    """``text`` with its relative time expressions rewritten as absolute ones, as of ``said_at``
    (the moment the sentence was said); the rest of the text is kept as it was. Idempotent:
    resolving the output again changes nothing. Rules and formats: the module docstring."""
    day = said_at.date()
    tense = sentence_tense(text)

    def replace(m: re.Match[str]) -> str:
        return _replacement(m, day, tense) or m.group()

    return _PATTERN.sub(replace, text)


_ANY_DAY = date(2000, 6, 15)


def has_relative_date(text: str) -> bool:
    """Whether ``resolve_relative_dates`` would rewrite something in ``text`` (for checks and
    metrics: a stored fact should hold none)."""
    tense = sentence_tense(text)
    return any(_replacement(m, _ANY_DAY, tense) is not None for m in _PATTERN.finditer(text))
