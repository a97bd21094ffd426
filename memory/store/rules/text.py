"""The text-search scale both backends share: Okapi BM25 with FTS5's IDF (idf = ln((N - n + 0.5) /
(n + 0.5)) floored at 1e-6) and k1 = 1.2, over words folded as FTS5's unicode61 tokenizer folds
them and Porter-stemmed (FTS5's ``porter`` tokenizer finds stem matches; the score counts them).
The statistics (N, avgdl, document frequencies) are the caller's facts', never the whole store's.

Length normalisation b = 0.15, not FTS5's built-in 0.75: facts are short, and a longer fact is
not padded with off-topic words — it usually says more about its subject. On the LoCoMo dev split
(bench/locomo.py; chosen on the even-numbered questions, plateau k1 0.5–1.2 × b 0–0.15 at hybrid
recall@10 0.70–0.705 there) this lifts hybrid recall@10 from 0.666 to 0.689 over all questions.

Chinese and Japanese are written without spaces (Korean attaches its particles to the word), so a
run of their characters is a clause, not a word: each such run is split into overlapping
character bigrams ("爱丽丝住在北京" -> "爱丽 丽丝 丝住 住在 在北 北京"), a lone character kept
whole, as Lucene's CJKAnalyzer and Elasticsearch's cjk_bigram do (``split_cjk``). A word of two
characters or more is then found inside a sentence without a dictionary, on every backend: each
indexes the split text (SQLite's FTS5 the pre-split search_text, PostgreSQL the terms, MongoDB
finds candidates by the same bigrams), and BM25 counts the bigrams. Text without such characters
is split exactly as before."""

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
# The scripts written without spaces between words, as code point ranges: Hangul jamo (what NFKD
# decomposes a syllable into), Han iteration marks and numerals, Hiragana, Katakana (with its
# prolonged sound mark, not its middle dot: punctuation), Hangul, Han ideographs (BMP, extensions,
# compatibility). Every character of them is a \w character: a run is a part of a word.
CJK_RANGES: tuple[tuple[str, str], ...] = (
    ("\u1100", "\u11ff"), ("\u3005", "\u3007"), ("\u3021", "\u3029"), ("\u3031", "\u3035"),
    ("\u3038", "\u303c"), ("\u3041", "\u3096"), ("\u309d", "\u309f"), ("\u30a1", "\u30fa"),
    ("\u30fc", "\u30ff"), ("\u3130", "\u318f"), ("\u31f0", "\u31ff"), ("\u3400", "\u4dbf"),
    ("\u4e00", "\u9fff"), ("\ua960", "\ua97f"), ("\uac00", "\ud7ff"), ("\uf900", "\ufaff"),
    ("\uff66", "\uff9d"), ("\U00020000", "\U0003134f"),
)  # fmt: skip
# The ranges as the inside of a character class ("a-b..."): none of their ends is special in
# a regex class or an SQLite GLOB class.
CJK_CLASS = "".join(f"{first}-{last}" for first, last in CJK_RANGES)
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_PHRASE = re.compile(r"\w+(?:-\w+)+")  # a phrase of a query (query_parts)


# Hiragana, Katakana and half-width Katakana, with their voicing marks: the texts whose fold
# changed when the voicing stopped being folded off (a store's upgrade folds them anew).
KANA_CLASS = "\u3041-\u309f\u30a0-\u30ff\uff66-\uff9f"

# The kana voicing marks (dakuten, handakuten as NFKD writes them): not a diacritic to fold off,
# they make another syllable, and so another word: "バス" (bus), "パス" (pass), "ハス" (lotus).
_KANA_VOICING = frozenset("\u3099\u309a")


def fold(text: str) -> str:
    """The text case- and diacritic-folded (NFKD, combining marks dropped but kana voicing, NFC,
    casefold): "ß" -> "ss", "ﬁ" -> "fi", "₂" -> "2", every mark of a letter off, a half-width
    "ｶﾞ" the full-width "ガ" it stands for. The text SQLite's FTS5 index holds
    (memory.store.sqlite.schema), so that it matches as PostgreSQL and MongoDB do."""
    if text.isascii():  # the common case, on the search hot path: nothing to decompose
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if not unicodedata.combining(c) or c in _KANA_VOICING)
    return unicodedata.normalize("NFC", kept).casefold()


def _bigrams(run: re.Match[str]) -> str:
    """A run of CJK characters as its overlapping bigrams, spaced apart (a lone character
    whole). NFC first: NFKD (``fold``) decomposed each Hangul syllable into its jamo."""
    chars = unicodedata.normalize("NFC", run.group())
    grams = [chars[i : i + 2] for i in range(len(chars) - 1)] or [chars]
    return f" {' '.join(grams)} "


def split_cjk(text: str) -> str:
    """The text with each run of CJK characters replaced by its bigrams, set apart by spaces from
    each other and from the letters around them ("iphone手机" -> "iphone 手机"); any other text
    as it is. The text SQLite's FTS5 index holds, so that its own tokenizer splits the runs as
    ``tokenize`` does (memory.store.sqlite.fts.search_text_of)."""
    return _CJK_RUN.sub(_bigrams, text)


def has_cjk(text: str) -> bool:
    """Whether the text holds a character ``split_cjk`` splits runs of."""
    return _CJK_RUN.search(text) is not None


def index_text(text: str) -> str:
    """The text folded (``fold``), its CJK runs split (``split_cjk``): what a word index that
    splits words at spaces and punctuation only is given to hold the words ``tokenize`` finds
    (SQLite's FTS5, MongoDB's $text index)."""
    folded = fold(text)
    return folded if folded.isascii() else split_cjk(folded)


def tokenize(text: str) -> list[str]:
    """Words, case- and diacritic-folded, runs of CJK characters as their bigrams: the \\w+
    words of ``index_text``, what FTS5's unicode61 tokenizer and $text (language "none") find
    in it."""
    return _WORD.findall(index_text(text))


def query_terms(query: str) -> list[str]:
    """The query's distinct words, in order, the first MAX_TERMS of them: what BM25 counts."""
    return list(dict.fromkeys(tokenize(query)))[:MAX_TERMS]


def query_parts(query: str) -> tuple[list[str], list[tuple[str, ...]]]:
    """What a store's index is asked for: the query's words found alone, and its phrases.
    A phrase is words joined by hyphens without a space ("a-17", "55-007": how
    memory.query_words asks for the other spellings of a code or a number); a fact holds it
    when it holds its words next to each other, whatever stands between them ("A-17", "A 17",
    "$55,007"), and its words are never searched alone: a bare "17" or "007" would fill the
    candidate cap with the facts holding it. BM25 counts every word (``query_terms``). A query
    without a hyphen between two words is its words alone, as ``query_terms``."""
    phrases: list[tuple[str, ...]] = []
    alone: list[str] = []
    for match in _PHRASE.finditer(query):
        words = tuple(tokenize(match.group()))
        if len(words) > 1:
            phrases.append(words)
        else:
            alone.extend(words)
    alone = query_terms(" ".join([_PHRASE.sub(" ", query), *alone]))
    return alone, list(dict.fromkeys(phrases))[:MAX_TERMS]


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
