"""Relative time expressions in facts resolve against the moment they were said (memory/dates.py):
the date a reader would write down, the rest of the sentence as it was, vague phrases untouched."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.dates import format_day, has_relative_date, resolve_relative_dates
from memory.months import MONTHS

MONDAY = datetime(2023, 5, 8, 14, 30, tzinfo=UTC)  # Monday 8 May 2023


def at(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # days
        ("I went to the gym yesterday.", "I went to the gym on 7 May 2023."),
        ("Yesterday I went to the gym.", "On 7 May 2023 I went to the gym."),
        ("She starts the new job today.", "She starts the new job on 8 May 2023."),
        ("The parcel arrives tomorrow.", "The parcel arrives on 9 May 2023."),
        ("He flew home the day before yesterday.", "He flew home on 6 May 2023."),
        ("The exam is the day after tomorrow.", "The exam is on 10 May 2023."),
        ("They are having pizza tonight.", "They are having pizza on the night of 8 May 2023."),
        ("I ran 5 km this morning.", "I ran 5 km on the morning of 8 May 2023."),
        ("Bob calls this afternoon.", "Bob calls on the afternoon of 8 May 2023."),
        ("I slept badly last night.", "I slept badly on the night of 7 May 2023."),
        ("We land tomorrow evening.", "We land on the evening of 9 May 2023."),
        ("Yesterday morning it rained.", "On the morning of 7 May 2023 it rained."),
        ("Yesterday was my birthday.", "7 May 2023 was my birthday."),
        ("Last night was fun.", "The night of 7 May 2023 was fun."),
        ("Next Friday works for Bob.", "12 May 2023 works for Bob."),
        ("Bob says, tomorrow is the day.", "Bob says, 9 May 2023 is the day."),
        ("The meeting tomorrow is short.", "The meeting on 9 May 2023 is short."),
        ("Yesterday's meeting ran late.", "7 May 2023's meeting ran late."),
        ("Yesterday’s meeting ran late.", "7 May 2023’s meeting ran late."),
        ("She has been sick since yesterday.", "She has been sick since 7 May 2023."),
        ("The offer is valid until tomorrow.", "The offer is valid until 9 May 2023."),
        ("He called earlier today.", "He called earlier on 8 May 2023."),
        ("YESTERDAY was hectic.", "7 May 2023 was hectic."),
        # counts
        ("I met Ana 3 days ago.", "I met Ana on 5 May 2023."),
        ("I met Ana three days ago.", "I met Ana on 5 May 2023."),
        ("I met Ana twelve days ago.", "I met Ana on 26 April 2023."),
        ("I met Ana twenty years ago.", "I met Ana in 2003."),
        ("I met Ana a couple of days ago.", "I met Ana on 6 May 2023."),
        ("I met Ana a couple days ago.", "I met Ana on 6 May 2023."),
        ("I met Ana just two days ago.", "I met Ana on 6 May 2023."),
        ("The trial ends in 5 days.", "The trial ends on 13 May 2023."),
        ("She is moving in a month.", "She is moving in June 2023."),
        ("The trial ends in two weeks' time.", "The trial ends on 22 May 2023."),
        ("The trial ends 3 weeks from now.", "The trial ends on 29 May 2023."),
        ("She adopted a cat two weeks ago.", "She adopted a cat on 24 April 2023."),
        ("She adopted a cat a week ago.", "She adopted a cat on 1 May 2023."),
        ("She adopted a cat about three weeks ago.", "She adopted a cat around 17 April 2023."),
        ("He quit smoking 2 months ago.", "He quit smoking in March 2023."),
        ("He quit smoking a year ago.", "He quit smoking in 2022."),
        ("He quit smoking 10 years ago.", "He quit smoking in 2013."),
        ("They will move in 3 months.", "They will move in August 2023."),
        ("They will move in about 2 years.", "They will move around 2025."),
        # weekdays (8 May 2023 is a Monday)
        ("Last Monday I ran.", "On 1 May 2023 I ran."),
        ("I ran last Friday.", "I ran on 5 May 2023."),
        ("I run next Monday.", "I run on 15 May 2023."),
        ("I run next Friday.", "I run on 12 May 2023."),
        ("I run this Friday.", "I run on 12 May 2023."),
        ("I ran this past Saturday.", "I ran on 6 May 2023."),
        ("I run this coming Sunday.", "I run on 14 May 2023."),
        ("We met last Friday night.", "We met on the night of 5 May 2023."),
        ("I will see Bob on Friday.", "I will see Bob on 12 May 2023."),
        ("I saw Bob on Friday.", "I saw Bob on 5 May 2023."),
        ("She is meeting Bob on Friday.", "She is meeting Bob on 12 May 2023."),
        (
            "I'm excited that Bob visits on Saturday, he'll stay.",
            "I'm excited that Bob visits on 13 May 2023, he'll stay.",
        ),
        (
            "She visited her mum on Sunday afternoon.",
            "She visited her mum on the afternoon of 7 May 2023.",
        ),
        ("She read poems last Fri.", "She read poems on 5 May 2023."),
        ("She reads poems next Thurs", "She reads poems on 11 May 2023"),
        # spans
        ("I moved last week.", "I moved the week before 8 May 2023."),
        ("I move next week.", "I move the week after 8 May 2023."),
        ("I am busy this week.", "I am busy the week of 8 May 2023."),
        ("The results come later this week.", "The results come later in the week of 8 May 2023."),
        ("We hiked last weekend.", "We hiked the weekend before 8 May 2023."),
        ("We hike next weekend.", "We hike the weekend after 8 May 2023."),
        ("We hike this weekend.", "We hike the weekend of 13 May 2023."),
        ("We hiked this past weekend.", "We hiked the weekend before 8 May 2023."),
        ("I moved to Berlin last month.", "I moved to Berlin in April 2023."),
        ("I move to Berlin next month.", "I move to Berlin in June 2023."),
        ("I am in Berlin this month.", "I am in Berlin in May 2023."),
        ("She got married last year.", "She got married in 2022."),
        ("She gets married next year.", "She gets married in 2024."),
        ("She got married this year.", "She got married in 2023."),
        ("Last year was tough.", "2022 was tough."),
        ("Last year's trip was to Peru.", "2022's trip was to Peru."),
        ("He has lived here since last month.", "He has lived here since April 2023."),
        ("I finish by next week.", "I finish by the week after 8 May 2023."),
        ("Sales grew earlier this year.", "Sales grew earlier in 2023."),
        ("We camped last summer.", "We camped in summer 2022."),
        ("We camp this summer.", "We camp in summer 2023."),
        ("We camp next summer.", "We camp in summer 2023."),
        ("It snowed a lot last winter.", "It snowed a lot in winter 2022–2023."),
        ("Since last fall he runs.", "Since fall 2022 he runs."),
        # several in one sentence
        (
            "Yesterday she booked a flight for next Friday and returns in 2 weeks.",
            "On 7 May 2023 she booked a flight for 12 May 2023 and returns on 22 May 2023.",
        ),
    ],
)
def test_relative_expressions_become_absolute_dates(text: str, expected: str) -> None:
    assert resolve_relative_dates(text, MONDAY) == expected
    assert has_relative_date(text)
    assert not has_relative_date(expected)


@pytest.mark.parametrize(
    "text",
    [
        # vague: no date to write down
        "I saw her recently.",
        "I saw her a few days ago.",
        "I saw her a few weeks ago.",
        "I saw her several days ago.",
        "I saw her the other day.",
        "We will meet soon.",
        "I saw her two or three days ago.",
        "I saw her 2-3 weeks ago.",
        "I saw her almost two weeks ago.",
        "I saw her over a year ago.",
        "I finished the book in two days.",
        "She runs 50 km in a week.",
        # absolute already
        "I moved to Berlin on 7 May 2023.",
        "The meeting is on Monday, 8 May 2023.",
        "The meeting is next Monday, May 15.",
        "In 2021 she graduated.",
        "She worked there for 3 years in 2019.",
        # durations, ordinals, habits, titles, lookalikes
        "Over the last week I ran every day.",
        "My last week at work was fun.",
        "The next year of the plan is funded.",
        "The last week of May is busy.",
        "She goes swimming on Mondays.",
        "She goes swimming every Monday.",
        "Monday is her favourite day.",
        "I like going out on Friday.",
        "She watched the Today show.",
        'She loves the song "Yesterday".',
        "In today's world everyone has a phone.",
        "todays tomorrows yesterdays",
        "The Tonight Show is long.",
        "He studies in the evening.",
        "This sun is hot, so is last sat.",
        "The last summer of the decade was hot.",
        "",
    ],
)
def test_vague_absolute_and_lookalike_phrases_stay_as_they_are(text: str) -> None:
    assert resolve_relative_dates(text, MONDAY) == text
    assert not has_relative_date(text)


@pytest.mark.parametrize(
    ("said", "text", "expected"),
    [
        (at(2023, 1, 31), "tomorrow", "on 1 February 2023"),
        (at(2023, 1, 31), "next month", "in February 2023"),
        (at(2023, 3, 31), "last month", "in February 2023"),
        (at(2023, 3, 31), "a month ago", "in February 2023"),
        (at(2023, 3, 1), "yesterday", "on 28 February 2023"),
        (at(2024, 3, 1), "yesterday", "on 29 February 2024"),
        (at(2024, 2, 28), "tomorrow", "on 29 February 2024"),
        (at(2024, 2, 29), "tomorrow", "on 1 March 2024"),
        (at(2024, 2, 29), "a year ago", "in 2023"),
        (at(2024, 2, 29), "I will go in a week", "I will go on 7 March 2024"),
        (at(2024, 2, 29), "12 months ago", "in February 2023"),
        (at(2023, 12, 31), "tomorrow", "on 1 January 2024"),
        (at(2023, 12, 31), "next month", "in January 2024"),
        (at(2023, 12, 31), "next year", "in 2024"),
        (at(2023, 12, 31), "next week", "the week after 31 December 2023"),
        (at(2024, 1, 1), "yesterday", "on 31 December 2023"),
        (at(2024, 1, 1), "last month", "in December 2023"),
        (at(2024, 1, 1), "last Sunday", "on 31 December 2023"),
        (at(2024, 1, 1), "3 months ago", "in October 2023"),
        (at(2024, 1, 31), "in 1 month", "in February 2024"),
        (at(2023, 9, 1), "last summer", "in summer 2023"),
        (at(2023, 8, 31), "last summer", "in summer 2022"),
        (at(2023, 12, 1), "this winter", "in winter 2023–2024"),
        (at(2024, 2, 29), "this winter", "in winter 2023–2024"),
        (at(2024, 2, 29), "last winter", "in winter 2022–2023"),
        (at(2024, 2, 29), "next winter", "in winter 2024–2025"),
        # the date of said_at in its own time zone, whatever the hour
        (datetime(2023, 5, 8, 23, 59, 59, tzinfo=UTC), "tomorrow", "on 9 May 2023"),
        (
            datetime(2023, 5, 8, 0, 0, tzinfo=timezone(timedelta(hours=-7))),
            "today",
            "on 8 May 2023",
        ),
        (datetime(2023, 5, 8, 0, 0), "today", "on 8 May 2023"),
    ],
)
def test_month_ends_year_ends_and_leap_days(said: datetime, text: str, expected: str) -> None:
    assert resolve_relative_dates(text, said) == expected


_DAY = re.compile(r"(\d{1,2}) (" + "|".join(MONTHS) + r") (\d{4})")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parsed(text: str) -> date:
    m = _DAY.search(text)
    assert m is not None, text
    return date(int(m.group(3)), MONTHS.index(m.group(2)) + 1, int(m.group(1)))


@pytest.mark.parametrize("said", [at(2023, 5, 8 + i) for i in range(7)], ids=WEEKDAYS)
@pytest.mark.parametrize("target", range(7), ids=WEEKDAYS)
def test_weekday_rules_from_every_day_of_the_week(said: datetime, target: int) -> None:
    name = WEEKDAYS[target]
    last = parsed(resolve_relative_dates(f"last {name}", said))
    nxt = parsed(resolve_relative_dates(f"next {name}", said))
    this = parsed(resolve_relative_dates(f"this {name}", said))
    day = said.date()
    assert last.weekday() == nxt.weekday() == this.weekday() == target
    assert 1 <= (day - last).days <= 7  # said on a Monday, "last Monday" is a week before
    assert 1 <= (nxt - day).days <= 7
    assert this - timedelta(days=this.weekday()) == day - timedelta(days=day.weekday())
    future = parsed(resolve_relative_dates(f"I will call on {name}", said))
    past = parsed(resolve_relative_dates(f"I called on {name}", said))
    assert (future, past) == (nxt, last)


def test_this_weekend_is_the_saturday_of_the_same_week() -> None:
    for offset in range(7):
        said = at(2023, 5, 8 + offset)
        assert resolve_relative_dates("this weekend", said) == "the weekend of 13 May 2023"


def test_the_day_format() -> None:
    assert format_day(date(2023, 5, 7)) == "7 May 2023"
    assert format_day(date(1999, 12, 31)) == "31 December 1999"


# --- properties: any moment, any sentence built from the handled expressions -------------------

# (expression, its offset in days when it is a single day, else None)
HANDLED = [
    ("yesterday", -1),
    ("today", 0),
    ("tomorrow", 1),
    ("the day before yesterday", -2),
    ("the day after tomorrow", 2),
    ("tonight", 0),
    ("this morning", 0),
    ("last night", -1),
    ("3 days ago", -3),
    ("a couple of days ago", -2),
    ("in two days", 2),
    ("two weeks ago", -14),
    ("in 3 weeks", 21),
    ("last Tuesday", None),
    ("next Saturday", None),
    ("this Thursday", None),
    ("last week", None),
    ("next weekend", None),
    ("this week", None),
    ("last month", None),
    ("next month", None),
    ("5 months ago", None),
    ("last year", None),
    ("next year", None),
    ("2 years ago", None),
    ("last summer", None),
    ("next winter", None),
    ("last Fri", None),
]
HEADS = ["", "Alice says that ", "Bob is at home ", "Since "]
TAILS = ["", ".", " and it is fine.", ", says Carol."]
RELATIVE_WORDS = re.compile(
    r"\b(yesterday|today|tomorrow|tonight|ago|last|next|this|in two|in 3)\b", re.IGNORECASE
)

moments = st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 12, 31))


@settings(max_examples=200, deadline=None)
@given(
    said=moments,
    picks=st.lists(st.sampled_from(HANDLED), min_size=1, max_size=3),
    head=st.sampled_from(HEADS),
    tail=st.sampled_from(TAILS),
)
def test_any_moment_any_sentence_resolves_fully_and_stably(
    said: datetime, picks: list[tuple[str, int | None]], head: str, tail: str
) -> None:
    text = head + ", then ".join(p for p, _ in picks) + tail
    out = resolve_relative_dates(text, said)
    assert has_relative_date(text)
    assert not has_relative_date(out)
    assert RELATIVE_WORDS.search(out) is None, out
    assert resolve_relative_dates(out, said) == out  # idempotent
    assert out.startswith(head) and out.endswith(tail)
    assert out[len(head) :].count(", then ") == len(picks) - 1
    phrase, offset = picks[0]
    if offset is not None and not head:
        assert parsed(out) == said.date() + timedelta(days=offset)
    if phrase == "yesterday":
        assert str((said.date() - timedelta(days=1)).year) in out  # said_at's calendar, no clock


VOCABULARY = str.split(
    "yesterday today tomorrow tonight Yesterday's last next this past coming week weekend month "
    "year years day days weeks ago in on the a an couple of few about or from now night morning "
    "Monday Friday Mondays will went was 3 12 two May 8 2023 , . I she moved since by later my"
)


@settings(max_examples=200, deadline=None)
@given(
    said=moments,
    text=st.lists(st.sampled_from(VOCABULARY), max_size=12).map(" ".join) | st.text(max_size=40),
)
def test_any_word_soup_is_stable_after_one_pass(said: datetime, text: str) -> None:
    once = resolve_relative_dates(text, said)
    assert resolve_relative_dates(once, said) == once
    assert not has_relative_date(once)
