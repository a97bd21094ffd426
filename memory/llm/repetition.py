"""A looping answer, seen while it streams.

Small models at low temperature fall into loops: the same sentence or list entry again and again
until the token cap (issue #22: a consolidation repeated two sentences to its 2,464-token cap,
179 s on 2 cores). A bounded schema limits the damage, the token cap ends it, but both only after
the whole budget is paid. This watches the text as it arrives and says when a run of a dozen
words has occurred for the third time, so the provider can hang up and raise the same error as
for malformed output (the retry then samples hotter).

The unit is the word (whitespace-separated), and the JSON between values is skipped: keys, braces
and brackets, numbers and null. A model pretty-prints its answer, a word to a line, so the glue
between two list items is a dozen words by itself ("scope": "user", "speaker": "jon", "sources":
[ 3 ] }, { "content": "Jon); counted, three distinct facts of one message that began with the
same name made a 12-word span occur three times, a loop by this rule
(tests/llm/test_repetition.py). Skipped, a loop is text said again: the values, the fact's words.
"""

from __future__ import annotations

import re

# A repeated span this long (in words) is a loop, not a turn of phrase.
NGRAM_WORDS = 12
# How often the newest n-gram must already have occurred: a fact legitimately restated once or
# twice is no loop, a third verbatim copy of a dozen words is.
REPEATS = 3
# Checked every this many new words: the cost stays linear in the answer.
_CHECK_EVERY = 4
# A word that is only JSON between values: a key, punctuation, a number, null or a boolean.
_GLUE = re.compile(r'[\[\]{},:]*(?:"\w+":)?[\[\]{},:]*|(?:-?\d+(?:\.\d+)?|null|true|false)[\]},]*')


class LoopDetector:
    """Feed it the streamed text; ``looping`` says whether the answer is repeating itself."""

    def __init__(self, ngram_words: int = NGRAM_WORDS, repeats: int = REPEATS) -> None:
        self._n = ngram_words
        self._repeats = repeats
        self._words: list[str] = []
        self._tail = ""  # an unfinished word at the end of the last chunk
        self._counts: dict[tuple[str, ...], int] = {}
        self._counted = 0  # n-grams counted so far (those ending before this word index)
        self.looping = False

    def feed(self, text: str) -> bool:
        """Add a streamed chunk; True once the answer loops."""
        if self.looping or not text:
            return self.looping
        joined = self._tail + text
        parts = joined.split()
        # The last part may continue in the next chunk, unless the chunk ended with whitespace.
        self._tail = "" if joined[-1].isspace() else (parts.pop() if parts else "")
        self._words += [word for word in parts if not _GLUE.fullmatch(word)]
        if len(self._words) - self._counted - self._n + 1 >= _CHECK_EVERY:
            self._count()
        return self.looping

    def _count(self) -> None:
        words = self._words
        for end in range(self._counted + self._n, len(words) + 1):
            gram = tuple(words[end - self._n : end])
            seen = self._counts.get(gram, 0) + 1
            self._counts[gram] = seen
            if seen >= self._repeats:
                self.looping = True
        self._counted = max(self._counted, len(words) - self._n + 1)
