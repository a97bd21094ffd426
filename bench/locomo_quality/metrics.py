"""The bench's scoring rules, each written once: pure functions, no I/O.

- ``route``: which speaker's view a question is asked in (the one whose first name it names;
  both when it names both or neither).
- ``interleave``: two views' ranked lists merged into one, alternating, duplicates dropped.
- ``evidence_recall``: share of a question's evidence turns among the turns the top facts were
  formed from.
- ``content_words`` / ``answer_token_recall``: share of the gold answer's content words (lowercase
  letters and digits, stop words out) present in the top facts' text.
- ``tokens``: the size of a text in tokens, estimated as characters / 4.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Hashable, Iterable, Sequence

from bench.locomo_quality.data import CATEGORIES

CHARS_PER_TOKEN = 4.0
_WORD = re.compile(r"[a-z0-9]+")
# Function words and the question's scaffolding: what a gold answer shares with any text.
_STOP_TEXT = """a about after all also am an and any are as at be been before being but by can could did
    do does doing done for from had has have having he her hers him his how i if in into is it its
    just me more most my no nor not of off on once only or other our ours out over own s same she
    should so some such t than that the their theirs them then there these they this those through
    to too under until up very was we were what when where which while who whom why will with would
    you your yours"""
STOP_WORDS = frozenset(_STOP_TEXT.split())


def content_words(text: str) -> list[str]:
    """Lowercase runs of letters and digits, stop words out, first occurrence kept."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS))


def answer_token_recall(answer: str, texts: Iterable[str]) -> float | None:
    """Share of the answer's content words found among the texts' words; None when the answer
    has no content word (it cannot be scored)."""
    wanted = content_words(answer)
    if not wanted:
        return None
    have = {w for text in texts for w in _WORD.findall(text.lower())}
    return sum(w in have for w in wanted) / len(wanted)


def evidence_recall(evidence: frozenset[str], found: Iterable[str]) -> float:
    """Share of the evidence dia_ids among ``found`` (the source turns of the top facts)."""
    return len(evidence & set(found)) / len(evidence) if evidence else 0.0


def route(question: str, speakers: Sequence[str]) -> list[int]:
    """Indexes of the speakers whose view the question is asked in: the one speaker whose first
    name it contains (as a word, possessive too); every speaker when it names several or none."""
    named = [
        i
        for i, name in enumerate(speakers)
        if name.split() and re.search(rf"\b{re.escape(name.split()[0])}\b", question, re.IGNORECASE)
    ]
    return named if len(named) == 1 else list(range(len(speakers)))


def interleave[T](lists: Sequence[Sequence[T]], k: int, key: Callable[[T], Hashable]) -> list[T]:
    """Round-robin over the ranked lists (first list first), skipping items already taken, until
    k items or the lists run out."""
    out: list[T] = []
    seen: set[Hashable] = set()
    for rank in range(max((len(x) for x in lists), default=0)):
        for ranked in lists:
            if rank < len(ranked) and key(ranked[rank]) not in seen:
                seen.add(key(ranked[rank]))
                out.append(ranked[rank])
                if len(out) == k:
                    return out
    return out


def tokens(text: str) -> int:
    return round(len(text) / CHARS_PER_TOKEN)


def mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.fmean(kept), 3) if kept else None


def by_category(rows: Sequence[tuple[int, float | None]]) -> dict[str, float | None]:
    """Mean overall and per category name of (category, value) rows; None values are unscored."""
    out = {"overall": mean(v for _, v in rows)}
    for number, name in CATEGORIES.items():
        out[name] = mean(v for c, v in rows if c == number)
    return out


def per_100(count: float, messages: int) -> float:
    return round(100 * count / messages, 2) if messages else 0.0
