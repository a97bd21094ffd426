"""An answer that repeats the prompt's own instructions is not memory.

A small model asked for "USER REFLECTIONS: preferences and directives, expertise and communication
style" sometimes answers with that line itself, citing nothing (recorded: Qwen2.5-Coder-1.5B on
the quality bench's hand-made conversation). Stored, it would sit in every later prompt as if the
user had said it. Such an item is recognised by what it is made of: nearly all of its content
words come from the instructions, few from the messages it was given, and it cites no message.
An item grounded in the window ("Ana prefers answers in Spanish", said by Ana, sharing words with
the instructions' example) is kept: the messages, not the instructions, explain its words.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache

from memory.query_words import STOP_WORDS
from memory.store.rules.text import stem, tokenize

# Shares of the item's content words; calibrated on the recorded echoes (all ≥ 0.9 from the
# instructions, ≤ 0.2 from the window) and on the reflections of the quality bench's heuristic run.
FROM_INSTRUCTIONS = 0.75
FROM_WINDOW = 0.5
MIN_WORDS = 3  # "Travel plans" is too short to tell an echo from a summary


def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(t) for t in tokenize(text) if t not in STOP_WORDS and not t.isdigit())


@cache
def _instruction_stems(instructions: str) -> frozenset[str]:
    return _stems(instructions)


def echoes_instructions(
    text: str, cited_anything: bool, instructions: str, window: Iterable[str]
) -> bool:
    """True when ``text`` repeats ``instructions`` rather than anything in ``window``."""
    if cited_anything:
        return False
    words = _stems(text)
    if len(words) < MIN_WORDS:
        return False
    from_instructions = len(words & _instruction_stems(instructions)) / len(words)
    if from_instructions < FROM_INSTRUCTIONS:
        return False
    said: set[str] = set()
    for message in window:
        said |= _stems(message)
    return len(words & said) / len(words) < FROM_WINDOW
