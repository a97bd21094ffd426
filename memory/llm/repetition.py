"""A looping answer, seen while it streams.

Small models at low temperature fall into loops: the same sentence or list entry again and again
until the token cap (issue #22: a consolidation repeated two sentences to its 2,464-token cap,
179 s on 2 cores; the 1.5B model's decisions repeated two sentences inside one ``merged_text``,
../shared/data/real-model/). A bounded schema limits the damage, the token cap ends it, but
both only after the whole budget is paid. This watches the JSON answer as it arrives and says
when it repeats itself, so the provider can hang up and raise the same error as for malformed
output (the retry then samples hotter). Three kinds of loop, none counted across the boundary of
a value (the words between items are never part of a span):

- within one string value, a run of a dozen words occurs for the third time (a text going round);
- the same dozen words opening a fourth value (a fact written again with a word more each time:
  "... in a dance studio again.", "... yet again.");
- within one list, the same entry (the words of its strings: a fact's content, scope and speaker)
  occurs for the third time (a model writing the same fact again, each time with other sources).

Counted over the whole answer, the words between two items were part of every span: first the
JSON keys (three facts of one message that began with the same name made a 12-word span of the
glue), then the values between the facts ("user", "bea": three distinct facts ending "every
morning with breakfast before she leaves for work" made one), and a correct answer was cut twice
and its message passed over (tests/llm/test_repetition.py). Keys, numbers, booleans and null are
never words. Across values one copy more is allowed: three things one message says alike ("I take
metformin, lisinopril and atorvastatin every morning ...") are three facts that share a clause.
Nor is a span shared by values that differ in the words before it counted across them at all:
four such facts ("Bea takes metformin / lisinopril / atorvastatin / aspirin every morning with
breakfast before she leaves for work at the office.") were cut as a loop. Only a value that opens
as another did is counted with it: a copy going on differently. A value repeated whole is caught
by the same-entry rule, a loop inside one value by the within-value rule.

A character of a script written without spaces (Chinese, Japanese, Thai: memory/word_count.py)
is a word, as it is for every limit counted in words: split on whitespace only, a Chinese value
going round was one growing word, never cut.

An answer that is not JSON at all has its bare words counted as one value, so a looping free
text is still cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memory.word_count import SPACELESS_RUN

# A repeated span this long (in words) within one value is a loop, not a turn of phrase.
NGRAM_WORDS = 12
# How often a span (within one value) or an entry must have occurred to be a loop: a fact
# legitimately restated once or twice is no loop, a third verbatim copy is. Across values: one more.
REPEATS = 3
# A list entry with fewer words than this ("NONE", a one-word title) may recur legitimately.
ENTRY_WORDS = 4
# Outside strings: a number, true, false or null; never a word of the answer.
_LITERAL = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")
_ESCAPED_SPACE = frozenset("nrtbf")


@dataclass
class _Container:
    """An open object or list. ``words``: the words of its strings so far (a list: of the entry
    being read, ``done`` those of the entries before); ``seen``: a list's entries, by their words."""

    is_list: bool
    words: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    seen: dict[tuple[str, ...], int] = field(default_factory=dict)
    expects_key: bool = True  # an object's next string is a key


@dataclass
class _Text:
    """The words of one string value (or of the answer's bare text) and its spans so far."""

    words: list[str] = field(default_factory=list)
    spans: dict[tuple[str, ...], int] = field(default_factory=dict)


class LoopDetector:
    """Feed it the streamed text; ``looping`` says whether the answer is repeating itself."""

    def __init__(self, ngram_words: int = NGRAM_WORDS, repeats: int = REPEATS) -> None:
        self._n = ngram_words
        self._repeats = repeats
        self._open: list[_Container] = []
        self._bare = _Text()  # words outside any string: an answer that is not JSON
        self._text: _Text | None = None  # the string being read
        self._values_opening: dict[tuple[str, ...], int] = {}  # span -> values opening with it
        self._is_key = False
        self._escaped = False
        self._word: list[str] = []  # the word being read
        self.looping = False

    def feed(self, text: str) -> bool:
        """Add a streamed chunk; True once the answer loops."""
        for char in text:
            if self.looping:
                break
            if self._text is not None:
                self._in_string(char, self._text)
            else:
                self._outside(char)
        return self.looping

    def _in_string(self, char: str, text: _Text) -> None:
        if self._escaped:
            self._escaped = False
            self._add_char(" " if char in _ESCAPED_SPACE else char, text)
        elif char == "\\":
            self._escaped = True
        elif char == '"':
            self._end_word(text)
            self._end_string(text)
        else:
            self._add_char(char, text)

    def _outside(self, char: str) -> None:
        if char == '"':
            self._end_word(self._bare)
            self._start_string()
        elif char in "{}[],:" or char.isspace():
            self._end_word(self._bare)
            self._structure(char)
        else:
            self._add_char(char, self._bare)

    def _add_char(self, char: str, text: _Text) -> None:
        if char.isspace():
            self._end_word(text)
        elif SPACELESS_RUN.fullmatch(char):
            # A word of its own: the script has no spaces to end it.
            self._end_word(text)
            self._word.append(char)
            self._end_word(text)
        else:
            self._word.append(char)

    def _end_word(self, text: _Text) -> None:
        if not self._word:
            return
        word = "".join(self._word)
        self._word = []
        if text is self._bare and _LITERAL.fullmatch(word):
            return
        text.words.append(word)
        if len(text.words) >= self._n:
            self._count_span(tuple(text.words[-self._n :]), text)

    def _count_span(self, span: tuple[str, ...], text: _Text) -> None:
        text.spans[span] = within = text.spans.get(span, 0) + 1
        # Across values only a value's opening: values that share a span after different words
        # are distinct things said alike; a span shared after the same words is shared from the
        # opening on, so counting the opening alone cuts such a copy no later.
        if len(text.words) == self._n and text is not self._bare:
            self._values_opening[span] = across = self._values_opening.get(span, 0) + 1
            self.looping = self.looping or across >= self._repeats + 1
        self.looping = self.looping or within >= self._repeats

    def _start_string(self) -> None:
        top = self._open[-1] if self._open else None
        self._is_key = top is not None and not top.is_list and top.expects_key
        self._text = _Text()

    def _end_string(self, text: _Text) -> None:
        self._text = None
        if not self._is_key and self._open:
            self._open[-1].words += text.words

    def _structure(self, char: str) -> None:
        top = self._open[-1] if self._open else None
        if char in "{[":
            self._open.append(_Container(is_list=char == "["))
        elif char in "}]" and top is not None:
            if top.is_list:
                self._end_entry(top)
            self._open.pop()
            if self._open:
                parent = self._open[-1]
                parent.words += top.done if top.is_list else top.words
                if parent.is_list:  # counted as it closes, not at the next comma
                    self._end_entry(parent)
        elif char == "," and top is not None:
            if top.is_list:
                self._end_entry(top)
            top.expects_key = True
        elif char == ":" and top is not None:
            top.expects_key = False

    def _end_entry(self, entries: _Container) -> None:
        """A list's entry is complete: count it, and keep its words for the list's container."""
        if len(entries.words) >= ENTRY_WORDS:
            entry = tuple(entries.words)
            entries.seen[entry] = seen = entries.seen.get(entry, 0) + 1
            self.looping = self.looping or seen >= self._repeats
        entries.done += entries.words
        entries.words = []
