"""What a word is, for every limit counted in words (a blob's, a merged fact's, a person's edit).

A script written without spaces between words (Chinese, Japanese, Korean, Thai, Lao, Khmer,
Burmese) has no whitespace to count by: a paragraph of Chinese would be one "word", and a limit
of 300 words would admit 60,000 characters. Each of its characters counts as a word instead, as
a tokenizer counts it about a token (memory/llm/context_fit.py estimates tokens with the same
characters). Elsewhere a word is what whitespace separates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Thai and Lao, Burmese, Khmer, CJK radicals to ideographs (kana, CJK punctuation and Hangul
# jamo among them), Yi, Hangul syllables, CJK compatibility ideographs, fullwidth forms, and the
# ideograph planes.
SPACELESS_CHARS = (
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u2e80-\u9fff\ua000-\ua4cf"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0003ffff"
)
SPACELESS_RUN = re.compile(f"[{SPACELESS_CHARS}]+")
# A word: one character of a spaceless script, or a run of anything else but whitespace.
_WORD = re.compile(f"[{SPACELESS_CHARS}]|[^\\s{SPACELESS_CHARS}]+")


def words(text: str) -> int:
    return len(_WORD.findall(text))


def word_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where each word of ``text`` starts and ends, in order."""
    return (match.span() for match in _WORD.finditer(text))


def first_words(text: str, count: int) -> str:
    """``text`` up to its ``count``-th word, its spacing kept (Chinese stays unspaced)."""
    end = 0
    for n, (_, stop) in enumerate(word_spans(text), 1):
        if n > count:
            break
        end = stop
    return text[:end]
