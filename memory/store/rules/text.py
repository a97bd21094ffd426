"""The text-search scale both backends share: Okapi BM25 with SQLite FTS5's constants and IDF
(k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6), the scale of
FTS5's -bm25(), over words folded as FTS5's unicode61 tokenizer folds them."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence

K1 = 1.2
B = 0.75
MIN_IDF = 1e-6

_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Words, case- and diacritic-folded: what $text (language "none") and FTS5's unicode61
    tokenizer match on."""
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return _WORD.findall(folded)


def token_count(text: str) -> int:
    """A fact's length for BM25 (stored beside the fact where the backend scores text itself)."""
    return len(tokenize(text))


def _stem(word: str) -> str:
    """A light English stem, so that "opens" meets "open" and "parties" meets "party" (FTS5's
    porter tokenizer finds such matches; the score must count them)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def bm25(
    terms: Sequence[str], contents: Mapping[str, str], n_docs: int, avg_len: float
) -> dict[str, float]:
    """BM25 of each candidate (id -> content) for the query terms; 0 for no term. ``n_docs``
    and ``avg_len`` describe the searched collection (at least the candidates): the caller's
    facts, never the whole store. Terms and words meet by their light stems."""
    terms = list(dict.fromkeys(_stem(t) for t in terms))
    tokens = {fid: Counter(_stem(t) for t in tokenize(text)) for fid, text in contents.items()}
    n_docs = max(n_docs, len(contents))
    avg_len = avg_len or 1.0
    idf = {}
    for term in terms:
        df = sum(1 for counts in tokens.values() if term in counts)
        idf[term] = max(MIN_IDF, math.log((n_docs - df + 0.5) / (df + 0.5)))
    scores: dict[str, float] = {}
    for fid, counts in tokens.items():
        length_norm = K1 * (1 - B + B * sum(counts.values()) / avg_len)
        scores[fid] = sum(
            idf[t] * counts[t] * (K1 + 1) / (counts[t] + length_norm) for t in terms if t in counts
        )
    return scores
