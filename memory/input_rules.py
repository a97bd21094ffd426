"""What we accept from outside. Text: a string every store, tokenizer and JSON encoder can hold;
numbers and timestamps: what JSON and the OpenAPI document say they are.

Python strings may carry unpaired UTF-16 surrogates (JSON's ``"\\ud800"`` decodes to one); UTF-8
cannot encode them, so SQLite, BSON, the tokenizer and the response encoder all fail on them deep
inside. NUL is refused too: C-string APIs (FTS tokenizers, BSON keys, C drivers) cut at it.
Checked once at every boundary (models, client calls, HTTP, MCP), so a bad string is a clear
input error and never reaches storage. A model's answer is not refused for them but cleaned
(``ModelText``): refused, it would be asked again, get the same answer, and its messages would
be passed over; the text without a stray NUL is what the model meant.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from memory.errors import InvalidInputError

# What no store holds: NUL (PostgreSQL's text and JSONB refuse it, C-string APIs cut at it) and
# UTF-16 surrogate code points (UTF-8 cannot encode one: a Python string holds them unpaired, a
# JSON decoder having joined every pair it met).
_SURROGATE = "\ud800-\udfff"
_SURROGATES = re.compile(f"[{_SURROGATE}]")
_UNSTORABLE = re.compile(f"[\x00{_SURROGATE}]")


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored, or None when it can."""
    if "\x00" in text:
        return f"holds a NUL character at offset {text.index(chr(0))}"
    if (bad := _SURROGATES.search(text)) is not None:
        return f"holds an unpaired surrogate U+{ord(bad.group()):04X} at offset {bad.start()}"
    return None


def storable_part(text: str) -> str:
    """``text`` without the characters ``text_problem`` refuses: storable on every backend."""
    return _UNSTORABLE.sub("", text)


def storable(text: str) -> str:
    """A pydantic validator: ``text`` unchanged, or ValueError saying what is wrong."""
    if (problem := text_problem(text)) is not None:
        raise ValueError(f"text {problem} (not valid Unicode text)")
    return text


def require_storable(text: str, what: str) -> str:
    """``text`` unchanged, or InvalidInputError naming ``what``."""
    if (problem := text_problem(text)) is not None:
        raise InvalidInputError(f"{what} {problem} (not valid Unicode text)")
    return text


# For the JSON Schema only (the validators say what is wrong more clearly than a regex): no NUL.
# Unpaired surrogates cannot be stated portably in a pattern; the descriptions name them.
NO_NUL = r"^[^\x00]*$"
# Control characters (C0, DEL and C1: U+009B is a terminal's escape as much as ESC) other than
# tab, newline and carriage return; and the format characters that show nothing by themselves.
_CONTROL = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
# Besides the format characters: the bidi embeddings, overrides and isolates, the combining
# grapheme joiner, the Hangul and Mongolian fillers and the blank braille pattern, which a font
# draws as nothing, and the variation selectors, which only choose another character's look.
_INVISIBLE = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u2069\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
# Beyond the Basic Multilingual Plane (the tag characters, the supplementary variation selectors):
# checked by the validator, left out of the JSON Schema's pattern, which cannot state them portably.
_INVISIBLE_ASTRAL = r"\U000e0000-\U000e007f\U000e0100-\U000e01ef"
# Something visible, and no control character but tab, newline and carriage return.
READABLE = f"^[^{_CONTROL}]*[^\\s{_CONTROL}{_INVISIBLE}][^{_CONTROL}]*$"
# No control character but tab, newline and carriage return.
NO_CONTROL = f"^[^{_CONTROL}]*$"
CONTROL_CHARACTER = re.compile(f"[{_CONTROL}]")
VISIBLE_CHARACTER = re.compile(f"[^\\s{_CONTROL}{_INVISIBLE}{_INVISIBLE_ASTRAL}]")
# What reorders the text shown after it (a name "\u202eecila" shows as "alice"): never in a name.
BIDI_CONTROL = re.compile(r"[\u202a-\u202e\u2066-\u2069]")
# Something besides whitespace, and no NUL.
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"

# A string field of an input model: valid Unicode, no NUL.
StorableStr = Annotated[str, AfterValidator(storable), Field(json_schema_extra={"pattern": NO_NUL})]


def _storable_answer(value: object) -> object:
    # Before pydantic's own str check, which refuses an unpaired surrogate as no valid string.
    return storable_part(value) if isinstance(value, str) else value


# A text field of a model's answer (memory/prompts): what text_problem refuses is dropped, for
# every provider alike, since each validates its answer with the output schema. The JSON Schema
# the model is sent is left as it was: the cleaning is ours, not a constraint on the model.
ModelText = Annotated[str, BeforeValidator(_storable_answer)]


def not_a_number(value: object) -> object:
    """pydantic reads a number as Unix time; an input timestamp is ISO 8601 text or a datetime."""
    if isinstance(value, (int, float)):
        raise ValueError("a timestamp is an ISO 8601 string with its offset, not a number")
    return value


def _whole(value: object) -> object:
    # JSON has one number type: 3.0 is the integer 3, but "3" and true are not numbers.
    if isinstance(value, (str, bool, bytes)):
        raise ValueError("an integer is a JSON number, not a string or a boolean")
    return value


# An integer field of an input: 3 and 3.0, not "3", not true, not 3.5.
WholeInt = Annotated[int, BeforeValidator(_whole)]


# A backend's clock may run ahead of ours, or a time zone be misread; a message dated further
# ahead is a clear error (stored, it would keep its session from ever going cold). One dated
# ahead by less is stored as said when recorded (``said_when_recorded``).
FUTURE_SKEW = timedelta(days=1)
# Before the Unix epoch, a timestamp is a zero or a unit mistake, not a conversation.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def misdated(created_at: datetime, now: datetime) -> str | None:
    """Why a message's ``created_at`` cannot be believed when recorded at ``now`` (None: it can)."""
    if created_at < EARLIEST:
        return f"created_at {created_at.isoformat()} is before 1970-01-01"
    if created_at - now > FUTURE_SKEW:
        return (
            f"created_at {created_at.isoformat()} is more than a day after the recording time "
            f"{now.isoformat(timespec='seconds')}"
        )
    return None


def said_when_recorded(created_at: datetime, now: datetime) -> datetime:
    """When a message recorded at ``now`` was said, as stored: its ``created_at``, or ``now``
    when it is dated ahead (accepted up to FUTURE_SKEW), on the message's own clock (its UTC
    offset kept: the speaker's calendar, which relative dates count in). Nothing is said after
    it is recorded: a time ahead is a clock's error, and believed it would order the message
    after every later one (a correction recorded a minute later would be "said before" the fact
    it corrects for up to that day, memory.store.rules.versions.said_before) and show its
    facts as said tomorrow."""
    if created_at <= now:
        return created_at
    return now.astimezone(created_at.tzinfo)


# The validators of MessageIn's content and name (memory.models).
def _no_control(text: str, what: str) -> str:
    if (bad := CONTROL_CHARACTER.search(text)) is not None:
        raise ValueError(
            f"{what} holds control character U+{ord(bad.group()):04X} at offset {bad.start()} "
            "(only tab, newline and carriage return are allowed)"
        )
    return text


def readable_content(content: str) -> str:
    if VISIBLE_CHARACTER.search(content) is None:
        raise ValueError("content is empty: only whitespace or invisible characters")
    return _no_control(content, "content")


def plain_name(name: str) -> str:
    if (bad := BIDI_CONTROL.search(name)) is not None:
        raise ValueError(
            f"name holds bidirectional control U+{ord(bad.group()):04X} at offset {bad.start()}: "
            "it reorders how the name and what follows it are shown"
        )
    return _no_control(name, "name")
