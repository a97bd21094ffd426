"""The end of a habit or a state, as the offline reader reads it: "I stopped taking aspirin", "I
quit smoking", "I gave up coffee" deny the stored fact as "I no longer take aspirin" does
(memory/fact_words.py ``negates``). The reader reads a fact's text through ``as_denied``
(memory/llm/fact_reading.py), and extraction keeps a short sentence that ends a habit
(``ends_a_habit``, memory/llm/heuristic.py)."""

from __future__ import annotations

import re

from memory.llm.decision_words import ADVERBS, PREPOSITIONS
from memory.llm.heuristic_person import conjugate
from memory.llm.verbs import verb_lemma

# The end of a habit or a state, said by the verb that ended: "stopped taking aspirin", "quit
# smoking", "has given up playing tennis", "gave up coffee". Only past forms ("I stop by on
# Mondays" is a habit of its own), and only before a gerund, or for "quit" and "gave up" before
# the thing given up: not "stopped by the bakery", "stopped at 45". A negation before it ("never
# stopped loving jazz") says the habit goes on.
_CEASED = re.compile(
    r"(?i)(?P<negation>(?:\b(?:has|have|had)\s+)?\b(?:never|not)\s+|\b\w+n't\s+)?"
    r"\b(?:(?:has|have|had)\s+)?(?P<verb>stopped|quit|gave\s+up|given\s+up)\s+(?P<what>[a-z]+)\b"
)
# Words in -ing that are no gerund: "quit during the race", "gave up the morning run".
_NO_GERUND = {"during", "morning", "evening", "spring", "string", "ceiling", "wedding"}
# The relation of a thing given up whose verb is not said ("gave up coffee"): it denies the value
# whatever verb stated it ("drinks coffee every morning"; memory/llm/fact_decisions.py). A token
# no one writes, read by ``opens_relation`` and ``_read_relation`` alone.
GIVE_UP = "give_up"
# "Smoking", "vaping", "hiking": a short stem of consonant, vowel, consonant had an "e" dropped.
_DROPPED_E = re.compile(r"^[^aeiou]*[^aeiouy][aeiou][^aeiouwxy]$")


def _gerund(word: str) -> bool:
    folded = word.casefold()
    return folded.endswith("ing") and len(folded) > 4 and folded not in _NO_GERUND | {"thing"}


def _verb_of(gerund: str) -> str:
    """The third person of the verb a gerund is of: "taking" -> "takes", "smoking" -> "smokes",
    "jogging" -> "jogs" (crude for verbs the rules do not know, which then read it alike)."""
    folded = gerund.casefold()
    if folded == "being":
        return "is"  # "stopped being afraid of dogs": "is no longer afraid of dogs"
    if (lemma := verb_lemma(folded)) is None:
        lemma = folded[:-3]
        if lemma[-1] == lemma[-2] and lemma[-1] not in "lsz":
            lemma = lemma[:-1]  # "jogging", "running"
        elif lemma[-1] in "cvu" or (len(lemma) <= 4 and _DROPPED_E.match(lemma)):
            lemma += "e"  # "dancing", "driving", "smoking"
    return conjugate(lemma)


def _denial_of(match: re.Match[str]) -> str:
    what = match["what"]
    if _gerund(what):
        # The verb first, then the negation: the verb opens the relation as in the stored fact
        # ("Alice smokes …": an unknown verb opens one only right after a name).
        verb = _verb_of(what)
        return f"still {verb}" if match["negation"] else f"{verb} no longer"
    if match["negation"] or match["verb"].casefold() == "stopped":
        return match[0]  # "never gave up coffee", "stopped the car": no end of a habit said
    if what.casefold() in PREPOSITIONS | ADVERBS | {"and", "or", "because", "so"}:
        return match[0]  # "gave up on Bob", "quit now"
    return f"{GIVE_UP} no longer {what}"


def as_denied(text: str) -> str:
    """The text as the rules read it, the end of a habit said as its denial: "Alice stopped
    taking aspirin" as "Alice takes no longer aspirin", "Alice quit smoking" as "Alice smokes no
    longer", "Alice gave up coffee" as a denial of coffee whatever the verb (``GIVE_UP``), and
    "Alice never stopped loving jazz" as "Alice still loves jazz". Read so, "no longer" decides
    the denial (memory/fact_words.py ``negates``), as for "Alice no longer takes aspirin"."""
    return _CEASED.sub(_denial_of, text)


def ends_a_habit(text: str) -> bool:
    """Whether the text says a habit or a state ended ("I quit smoking", "I gave up coffee")."""
    return any(
        _denial_of(match) != match[0] and not match["negation"] for match in _CEASED.finditer(text)
    )
