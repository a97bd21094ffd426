"""The offline rules' item texts within an answer's bounds, whatever the words they are cut from."""

from __future__ import annotations

from memory.prompts.common import MAX_TEXT_CHARS

# A word longer than this is no word a person reads (a link's token, a run of emoji): it is cut.
LONGEST_WORD = 60


def fit(text: str, max_words: int) -> str:
    """An item's text within both bounds of the answer: at most ``max_words`` words and
    MAX_TEXT_CHARS characters, a word longer than LONGEST_WORD cut to its start and an ellipsis.
    One long "word" (a link, a paragraph without spaces) never fails the whole answer, and the
    sentence's other words are kept: "My passport number is X9912345" beside a 480-character link.
    """
    words = [
        word if len(word) <= LONGEST_WORD else word[: LONGEST_WORD - 1] + "\u2026"
        for word in text.split()[:max_words]
    ]
    while len(" ".join(words)) > MAX_TEXT_CHARS:
        words.pop()  # every word fits alone, so the first one always stays
    return " ".join(words)
