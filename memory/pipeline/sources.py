"""Provenance of an extracted item: which of the window's messages it was formed from.

The prompts number the window's messages from 1 and the model cites those numbers. A citation is
checked here, never trusted: numbers outside the window are dropped; an item left with no valid
citation is repaired by attributing it to the message it shares most words with (of its speaker,
when the item is user memory). An item that cited only numbers outside the window and shares no
word with any message is dropped (the answer is confused about what it read). One that cited
nothing at all (a model that ignores the instruction, an answer recorded before citations) is
kept, unsourced, said by the end of the window: nothing said is dropped for a missing citation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from memory.dates import has_relative_date, in_offset
from memory.models import MAX_SOURCES, StoredMessage
from memory.query_words import STOP_WORDS
from memory.store.rules.text import stem, tokenize


@dataclass(frozen=True)
class Sources:
    message_ids: tuple[str, ...]  # () for an item that cited nothing and matched no message
    # The latest cited message's time, when the item was complete, with the UTC offset it was
    # sent with (the instant is the message's; memory.said says why the offset rides in it).
    said_at: datetime
    # What its relative dates are resolved against, on its speaker's clock (the UTC offset the
    # message was sent with, memory.dates.in_offset; UTC for one stored without): the first
    # cited message that says one ("tomorrow" said on Monday, cited with Tuesday's "booked!", is
    # Monday's), else the latest cited message. The instant is the message's.
    dates_from: datetime
    repaired: bool = False


def _local(message: StoredMessage) -> datetime:
    return in_offset(message.created_at, message.utc_offset_minutes)


@lru_cache(maxsize=64)
def _says_relative(content: str) -> bool:
    """has_relative_date, once per message: every fact cited from a message asks it again, and a
    dense message of 100,000 characters takes ~50 ms a reading, for each of its ~320 facts."""
    return has_relative_date(content)


def _of(messages: Sequence[StoredMessage], repaired: bool = False) -> Sources:
    latest = max(messages, key=lambda m: m.created_at)
    relative = [m for m in messages if _says_relative(m.content)]
    return Sources(
        message_ids=tuple(m.message_id for m in messages),
        said_at=_local(latest),
        dates_from=_local(min(relative, key=lambda m: m.created_at) if relative else latest),
        repaired=repaired,
    )


def any_cited(numbers: Sequence[int] | None, messages: Sequence[StoredMessage]) -> bool:
    """Whether the item cites at least one message of the window."""
    return any(1 <= n <= len(messages) for n in numbers or ())


def cited(
    numbers: Sequence[int] | None,
    messages: Sequence[StoredMessage],
    text: str,
    speaker: str | None = None,
) -> Sources | None:
    """The item's sources, in message order (at most MAX_SOURCES, the first ones), or None when
    it cannot be grounded in the window. ``speaker``: the user id a user-scope item belongs to."""
    valid = sorted({n for n in numbers or () if 1 <= n <= len(messages)})[:MAX_SOURCES]
    if valid:
        return _of([messages[n - 1] for n in valid])
    best = _best_match(messages, text, speaker)
    if best is not None:
        return _of([best], repaired=True)
    if numbers or not messages:
        return None
    latest = max(messages, key=lambda m: m.created_at)
    return Sources(message_ids=(), said_at=_local(latest), dates_from=_local(latest), repaired=True)


def _best_match(
    messages: Sequence[StoredMessage], text: str, speaker: str | None
) -> StoredMessage | None:
    """The message sharing most content words with ``text`` (the speaker's own first, when
    given); ties go to the earliest (where it was said first)."""
    words = _stems(text)
    if not words:
        return None
    pools = [m for m in messages if speaker is not None and m.user_id == speaker], list(messages)
    for pool in pools:
        scored = [(len(words & _stems(m.content)), -m.seq, m) for m in pool]
        scored = [s for s in scored if s[0] > 0]
        if scored:
            return max(scored, key=lambda s: s[:2])[2]
    return None


def shares_words(item: str, message: str) -> bool:
    """Whether ``item`` and ``message`` have a content word in common (by stem)."""
    return bool(_stems(item) & _message_stems(message))


@lru_cache(maxsize=256)
def _message_stems(content: str) -> frozenset[str]:
    """_stems of a message, once: each item of a window may be checked against it."""
    return frozenset(_stems(content))


def _stems(text: str) -> set[str]:
    """Stemmed content words: "Alice lives in Paris" meets "I live in Paris"."""
    return {stem(t) for t in tokenize(text) if t not in STOP_WORDS}
