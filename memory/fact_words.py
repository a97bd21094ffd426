"""The words two fact texts are compared by where no model is asked: the same-text rule before the
dedup decision (memory/pipeline/predecide.py), the store's exact-duplicate key
(memory/ids.py ``normalize_text``) and the checks on a model's decision (memory/llm/fact_overlap.py).

Two texts are the same words only when a reader could not tell them apart by what they say:

- A symbol that changes a value belongs to it: a sign before a number ("18 degrees" / "-18
  degrees", "$200" / "-$200"), a currency ("$50,000" / "€50,000"), "%" ("10%" / "$10"), "#" and
  "°", and a grade's, a blood type's or a language's suffix ("A+" / "A-", "C" / "C++" / "C#").
- A code keeps its letter case: a token that holds a digit, or whose letters mix cases inside one
  word ("Tr0ub4dor" / "tr0ub4dor", "QX7Bz" / "QX7BZ", "iPhone"). Every other word is case-folded
  ("Berlin" / "berlin", "USA" / "usa", "Wi-Fi" / "wi-fi"): a capital there says nothing.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

# Every currency sign of the Basic Multilingual Plane (Unicode category Sc): "$", "€", "£", "¥", …
_CURRENCY = "".join(c for c in map(chr, range(0x20, 0x10000)) if unicodedata.category(c) == "Sc")
_MONEY = re.escape(_CURRENCY)
# Letters and digits, joined inside by ' - . , : / ("Alice's", "555-1234", "50,000", "10:00").
_CORE = r"[^\W_]+(?:[-.,:'/][^\W_]+)*"
_TOKEN = re.compile(
    rf"(?:(?<![^\s(\[])[-+](?=[{_MONEY}#]*\d))?"  # a sign before a number: -18, -$200, +5
    rf"[{_MONEY}#]*"  # a currency, a number sign: $50,000, €50,000, #5
    rf"{_CORE}"
    r"(?:\+\+|[+#%°]|-(?![^\W_]))?"  # C++, A+, C#, 10%, 18°, O-
    rf"|[{_MONEY}#%°+]"  # one standing alone: "50 %", "€ 50"
)
_CASED = re.compile(_CORE)
_LETTERS = re.compile(r"[^\W\d_]+")
_DIGIT = re.compile(r"\d")
# Dashes that read as a minus sign or a hyphen; typographic apostrophes.
_SAME_CHARACTER = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2019": "'"})
# Words whose presence never changes what a fact says ("a" only as an article: see ``words``).
# Negations, tense and prepositions do ("is" / "was", "for" / "by"), so they stay.
_ARTICLES = frozenset({"an", "the"})
# The words that deny what the rest of a sentence says ("no longer", "not", "never"), and so make
# it another statement than the same words without them: the offline decision rules read a fact
# by them (memory/llm/decision_words.py), and a new version's sources do (store/rules/versions.py).
NEGATIONS = frozenset({"not", "no", "never", "cannot", "longer"})


def is_code(token: str) -> bool:
    """Whether a token keeps its letter case: it holds a digit, or a word of it mixes cases other
    than a capital first letter ("QX7Bz", "iPhone", "McDonald", but not "Alice's", "USA")."""
    if _DIGIT.search(token):
        return True
    return any(not (w.islower() or w.isupper() or w.istitle()) for w in _LETTERS.findall(token))


def _fold(token: str) -> str:
    return token if is_code(token) else token.casefold()


def fold_but_codes(text: str) -> str:
    """``text`` case-folded, but its codes (``is_code``) as written."""
    out: list[str] = []
    end = 0
    for match in _CASED.finditer(text):
        out += [text[end : match.start()].casefold(), _fold(match[0])]
        end = match.end()
    out.append(text[end:].casefold())
    return "".join(out)


def tokens(text: str) -> list[str]:
    """The text's words, as written (NFKC): letters and digits with their inner separators and
    the symbols that change a value (the module docstring), punctuation and spaces dropped."""
    normal = unicodedata.normalize("NFKC", text).translate(_SAME_CHARACTER)
    return _TOKEN.findall(normal)


def words(text: str) -> tuple[str, ...]:
    """The fact's words in order, as the same-text rule compares them: case-folded but codes,
    articles dropped ("a" only before another word, lower case or opening the sentence: the "A"
    of "blood type A" or "an A in physics" is a value), symbols that change a value kept."""
    said = tokens(text)
    kept = [
        w
        for i, w in enumerate(said)
        if i + 1 == len(said)
        or not (w.casefold() in _ARTICLES or w == "a" or (w == "A" and i == 0))
    ]
    return tuple(_fold(w) for w in kept)


def values(text: str) -> frozenset[str]:
    """The text's numbers and codes (tokens holding a digit), exact: with their sign, currency,
    unit symbol and letter case ("-18", "$50,000", "10%", "QX7Bz")."""
    return frozenset(w for w in tokens(text) if _DIGIT.search(w))


def negates(written: Sequence[str], i: int) -> bool:
    """Whether the word at ``written[i]`` (a text's words as written, case kept) is a negation:
    a word of NEGATIONS or a contraction of "not" ("isn't", "doesn't", "won't"), but not a word
    of a name. A negation capitalised mid-sentence, after a word in lower case and before a
    capitalised one, is a title's ("Alice loves No Doubt", "Alice read Never Let Me Go"): read
    as a denial, loving a band would contradict loving it. A sentence in title case ("Alice Does
    Not Eat Meat") or opening with the word ("No, …") still denies."""
    word = written[i].casefold()
    if word not in NEGATIONS and not word.endswith("n't"):
        return False
    if i == 0 or i + 1 == len(written):
        return True  # a sentence's first or last word: no name's inside it
    before, after = written[i - 1], written[i + 1]
    return not (written[i].istitle() and after[:1].isupper() and not before[:1].isupper())


def denies(text: str) -> bool:
    """Whether the text holds a negation (``negates``; ``tokens`` reads a typographic apostrophe
    as "'"). Not a bare "longer": it denies only after "no" or "not … any", which say so already;
    alone it compares ("a longer commute")."""
    said = tokens(text)
    return any(w.casefold() != "longer" and negates(said, i) for i, w in enumerate(said))
