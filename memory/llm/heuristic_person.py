"""The offline rules' third person: what a speaker says of themselves, written of them by name
("I live in Paris" → "Alice lives in Paris"). Only the simple, common forms."""

from __future__ import annotations

import re
from collections.abc import Callable

from memory.llm.decision_words import ADVERBS

# Verbs ending in -ly, which are not adverbs: "I fly to Kathmandu" is not "I (fly) to…".
_LY_VERBS = r"(?:fly|rely|apply|reply|supply|comply|imply|multiply|ally|bully|rally|tally|dally)"
# Words said between "I" and the verb that are no verb: they are kept as they are and the word
# after them is conjugated ("I now live" → "Alice now lives", not "Alice nows live"). The dedup
# rules' adverbs (one list for both) and those that only stand before a verb.
_BEFORE_VERB = sorted(
    ADVERBS
    | {"sometimes", "once", "even", "ever", "too", "never", "rarely", "seldom", "mostly"}
    | {"first", "finally", "soon", "later", "no longer", "no more", "not only"},
    key=lambda words: (-len(words), words),  # one order each run; "no longer" before "no"
)
_ADVERBS = rf"(?: (?:(?!{_LY_VERBS}\b)\w+ly|{'|'.join(_BEFORE_VERB)})(?=\s))*"
_UNCHANGED = {"can", "could", "will", "would", "should", "may", "might", "must", "was", "had"}
# Irregular past forms take no -s ("I went" → "Alice went"); regular ones end in -ed.
_UNCHANGED |= set(
    [
        "ate",
        "became",
        "began",
        "bought",
        "brought",
        "built",
        "came",
        "caught",
        "chose",
        "did",
        "drew",
        "drove",
        "fell",
        "felt",
        "flew",
        "forgot",
        "found",
        "gave",
        "got",
        "grew",
        "heard",
        "held",
        "kept",
        "knew",
        "led",
        "left",
        "lent",
        "let",
        "lost",
        "made",
        "meant",
        "met",
        "paid",
        "put",
        "quit",  # "I quit smoking": said of a habit ended, not one kept ("Alice quits …")
        "ran",
        "read",
        "rode",
        "said",
        "sang",
        "sat",
        "saw",
        "sent",
        "set",
        "slept",
        "sold",
        "spent",
        "stood",
        "swam",
        "taught",
        "thought",
        "threw",
        "told",
        "took",
        "understood",
        "went",
        "woke",
        "won",
        "wore",
        "wrote",
    ]
)
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes"}
# Present forms that end in -ed as regular past forms do ("I need" → "Alice needs", not "Alice
# need"): "agreed", "freed" are past, so the ending alone cannot tell them apart.
_PRESENT_ED = {"need", "feed", "bleed", "breed", "speed", "succeed", "proceed", "exceed", "heed"}
# Not "wed", "shed": past forms too ("I wed Carol in 2015").
_PRESENT_ED |= {"seed", "weed", "embed"}


def conjugate(verb: str) -> str:
    """The verb's third person singular: "live" -> "lives"; a past form as it is."""
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb in _UNCHANGED or not verb.isalpha() or not verb.islower():
        return verb
    if verb.endswith("ed") and verb not in _PRESENT_ED:
        return verb
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def third_person(sentence: str, name: str) -> str:
    """'I live in Paris' → 'Alice lives in Paris'; only the simple, common forms.

    Every replacement is a function: a replacement string is a template, and a name is any
    text a backend sends ("CORP\\jsmith" would be read as the escape "\\j" and raise)."""

    def said(replacement: str) -> Callable[[re.Match[str]], str]:
        return lambda _: replacement

    text = re.sub(r"(?i)\bcall me\b", said(f"{name} wants to be called"), sentence)
    text = re.sub(r"\bI(?:'m| am)\b", said(f"{name} is"), text)
    text = re.sub(r"\bI've\b", said(f"{name} has"), text)
    text = re.sub(r"\bI(?: don't| do not)\b", said(f"{name} does not"), text)
    text = re.sub(r"\bI'(d|ll)\b", lambda m: f"{name} {'would' if m[1] == 'd' else 'will'}", text)
    text = re.sub(rf"\bI({_ADVERBS}) (\w+)", lambda m: f"{name}{m[1]} {conjugate(m[2])}", text)
    text = re.sub(r"\b[Mm]y\b", said(f"{name}'s"), text)
    text = re.sub(r"\b(?:me|myself)\b", said(name), text)
    return text[:1].upper() + text[1:]
