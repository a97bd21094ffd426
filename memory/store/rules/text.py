"""The text-search scale both backends share: Okapi BM25 with FTS5's IDF (idf = ln((N - n + 0.5) /
(n + 0.5)) floored at 1e-6) and k1 = 1.2, over words folded as FTS5's unicode61 tokenizer folds
them and Porter-stemmed (FTS5's ``porter`` tokenizer finds stem matches; the score counts them).
The statistics (N, avgdl, document frequencies) are the caller's facts', never the whole store's.

Length normalisation b = 0.15, not FTS5's built-in 0.75: facts are short, and a longer fact is
not padded with off-topic words — it usually says more about its subject. On the LoCoMo dev split
(bench/locomo.py; chosen on the even-numbered questions, plateau k1 0.5–1.2 × b 0–0.15 at hybrid
recall@10 0.70–0.705 there) this lifts hybrid recall@10 from 0.666 to 0.689 over all questions."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from functools import lru_cache

import snowballstemmer

K1 = 1.2
B = 0.15
MIN_IDF = 1e-6
# A query's words that count (the first ones), and the candidates a search scores: the matches
# beyond it are left out (each backend keeps the newest, or its server's most relevant).
MAX_TERMS = 64
CANDIDATE_CAP = 1000

_WORD = re.compile(r"\w+")
_PORTER = snowballstemmer.stemmer("porter")


def fold(text: str) -> str:
    """The text case- and diacritic-folded (NFKD, combining marks dropped, casefold): "ß" ->
    "ss", "ﬁ" -> "fi", "₂" -> "2", every mark of a letter off. The text SQLite's FTS5 index holds
    (memory.store.sqlite.schema), so that it matches as PostgreSQL and MongoDB do."""
    if text.isascii():  # the common case, on the search hot path: nothing to decompose
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def tokenize(text: str) -> list[str]:
    """Words, case- and diacritic-folded: what $text (language "none") and FTS5's unicode61
    tokenizer (over the folded text) match on."""
    return _WORD.findall(fold(text))


def query_terms(query: str) -> list[str]:
    """The query's distinct words, in order, the first MAX_TERMS of them."""
    return list(dict.fromkeys(tokenize(query)))[:MAX_TERMS]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Porter stem of a folded word, as FTS5's ``porter`` tokenizer indexes it, but for a
    few words (FTS5 keeps a word under 3 letters whole; some of its rules differ: "-logy",
    "-bly"): the documented differences of tests/store/test_sqlite_text.py."""
    return str(_PORTER.stemWord(word))


def stemmed_tokens(text: str) -> list[str]:
    """``tokenize`` then Porter stems: the terms of an FTS5 ``porter unicode61`` index."""
    return [stem(word) for word in tokenize(text)]


def idf(n_docs: int, df: int) -> float:
    return max(MIN_IDF, math.log((n_docs - df + 0.5) / (df + 0.5)))


def bm25_scores(
    docs: Mapping[str, tuple[int, Sequence[int]]], idfs: Sequence[float], avg_len: float
) -> dict[str, float]:
    """BM25 of each candidate (id -> its length in terms and how often it holds each query
    term), given each query term's idf; 0 for no term."""
    avg_len = avg_len or 1.0
    scores: dict[str, float] = {}
    for fid, (length, counts) in docs.items():
        length_norm = K1 * (1 - B + B * length / avg_len)
        score = 0.0
        for term_idf, n in zip(idfs, counts, strict=True):
            if n:
                score += term_idf * n * (K1 + 1) / (n + length_norm)
        scores[fid] = score
    return scores


def bm25(terms: Sequence[str], contents: Mapping[str, str], n_docs: int) -> dict[str, float]:
    """BM25 of each candidate (id -> content) for the query terms; see ``bm25_of_terms``."""
    return bm25_of_terms(
        terms, {fid: stemmed_tokens(text) for fid, text in contents.items()}, n_docs
    )


def query_stems(terms: Sequence[str]) -> list[str]:
    """The query words' Porter stems, each once: the terms a candidate's counts are taken of."""
    return list(dict.fromkeys(stem(t) for t in terms))


def bm25_of_terms(
    terms: Sequence[str], docs: Mapping[str, Sequence[str]], n_docs: int
) -> dict[str, float]:
    """BM25 of each candidate (id -> its ``stemmed_tokens``) for the query's words; 0 for no
    term. Query words and fact words meet by their Porter stems; see ``bm25_of_counts``."""
    stems = query_stems(terms)
    counted = {fid: (len(words), [words.count(t) for t in stems]) for fid, words in docs.items()}
    return bm25_of_counts(counted, n_docs)


def bm25_of_counts(docs: Mapping[str, tuple[int, Sequence[int]]], n_docs: int) -> dict[str, float]:
    """BM25 of each candidate (id -> its length in stemmed tokens and how often it holds each of
    the ``query_stems``, in their order); 0 for no term. ``n_docs`` counts the searched
    collection: the caller's facts, never the whole store, so another agent's data never moves
    a score. Document frequencies and the average length are taken over the candidates (the
    matches), so a search never scans the caller's facts to score them; with b = 0.15 the
    length average weighs little. A store that keeps each fact's counts (PostgreSQL) scores
    without reading or stemming the candidates' texts."""
    n_docs = max(n_docs, len(docs))
    avg_len = sum(length for length, _ in docs.values()) / len(docs) if docs else 1.0
    terms = len(next(iter(docs.values()))[1]) if docs else 0
    idfs = [idf(n_docs, sum(1 for _, counts in docs.values() if counts[i])) for i in range(terms)]
    return bm25_scores(docs, idfs, avg_len)
