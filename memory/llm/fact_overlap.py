"""What two facts have in common, word by word: the rules that stand after a model's dedup
decision (memory/pipeline/dedup.py, memory/pipeline/restatements.py).

- ``nothing_in_common``: no word but the names both are about; a model's change of one by the
  other is refused.
- ``keeps_the_thing``: a change names the stored fact's attribute or its verb; one that names
  neither is another fact about the same person, and a model's change is refused too.
- ``may_restate``: the same numbers and names, nothing added, denied or in another tense; a model
  is asked whether the new fact states the stored one again.

Both read facts with the offline rules' own reading (memory/llm/fact_decisions.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.llm.fact_decisions import (
    _ADVERBS,
    _AUXILIARIES,
    _BE,
    _DETERMINERS,
    _MANY_VALUES,
    _NEGATIONS,
    _OPENER,
    _PREPOSITIONS,
    _STOPWORDS,
    _TOKEN,
    _fold,
    _is_number,
    _lemma,
    parse_fact,
    split_statement,
)
from memory.tense import sentence_tense

# Words that never tell which fact a sentence states: function words, owners every fact may
# name, and verbs that hold many values ("Alice likes pizza", "Alice likes sushi": both hold).
_NOT_EVIDENCE = _DETERMINERS | _PREPOSITIONS | _BE | _AUXILIARIES | _ADVERBS | _NEGATIONS
_NOT_EVIDENCE |= _STOPWORDS | _MANY_VALUES | {"and", "or", "but", "of", "than", "so", "very"}
_NOT_EVIDENCE |= {"i", "me", "we", "us", "you", "he", "him", "she", "it", "they", "them"}
_NOT_EVIDENCE |= {"who", "which", "what", "when", "where", "there", "here", "more", "most"}
_NOT_EVIDENCE |= {"user", "agent", "assistant", "new", "old", "previous", "current", "former"}
_NOT_EVIDENCE |= {"get", "got", "make", "do", "go", "have", "want", "plan", "like"}


def _root(word: str) -> str:
    """A word's crude root, so that "opens" meets "opening" and "dance" meets "dancing"."""
    if (lemma := _lemma(word)) is not None:
        return lemma
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.removesuffix("e") if len(word) > 3 else word


@dataclass(frozen=True)
class _Said:
    """A fact's content words by root: whether each is a name (capitalised wherever it is written,
    the sentence's first word too unless it is also written lower case), and its numbers."""

    names: frozenset[str]
    common: frozenset[str]
    numbers: frozenset[str]
    subject: frozenset[str] | None  # the statement's subject, None when the fact does not split


def _said(text: str) -> _Said:
    text = _OPENER.sub("", text.replace("\u2019", "'"))
    names: set[str] = set()
    common: set[str] = set()
    numbers: set[str] = set()
    for raw in _TOKEN.findall(text):
        folded = _fold(raw).strip("$.,:")
        if _is_number(folded):
            numbers.add(folded)
        elif folded and folded not in _NOT_EVIDENCE and _root(folded) not in _NOT_EVIDENCE:
            (names if raw[:1].isupper() else common).add(_root(folded))
    statement = split_statement(text)
    return _Said(
        names=frozenset(names - common),
        common=frozenset(common),
        numbers=frozenset(numbers),
        subject=None if statement is None else frozenset(_root(w) for w in statement.subject),
    )


def nothing_in_common(new: str, old: str, *, numbers: bool) -> bool:
    """Whether two facts share no word that says what they state: no common noun or verb, no name
    outside the names they are about, and (with ``numbers``) no number.

    A name both facts are about says whom they concern, not what they say of them: "The total
    budget for the Mars Festival was raised to $70,000" and "The Mars Festival opens on March 15,
    2027 in Lisbon" share "Mars Festival" and nothing else; "Gina appreciates Jon's help" and
    "Gina found a place with great light" share "Gina". One cannot be a new value of the other,
    whatever a model answers. A correction names what it corrects ("the total budget", "the
    vendor contract deadline", "Alice lives in"), so it shares a word with its target;
    one in other words entirely ("Alice moved to Berlin" for "Alice lives in Paris") shares none,
    and the rules read it as a fact beside the other (ADD), as they do for the offline provider.
    A name in what is said counts ("Carla Reyes replaces Bob Martins as head of logistics")."""
    a, b = _said(new), _said(old)
    shared = (a.common | a.names) & (b.common | b.names)
    if shared & (a.common | b.common) or (numbers and a.numbers & b.numbers):
        return False  # a word written lower case somewhere is no name: "Budget" / "the budget"
    if a.subject is None or b.subject is None:
        return True  # no statement to tell whom a fact is about: any name may be
    return not shared - a.subject - b.subject


def keeps_the_thing(new: str, old: str) -> bool:
    """Whether a change of ``old`` by ``new`` names what ``old`` is about: a word of its subject
    other than a name ("the total budget", "the wifi password", "locker 17's code") or its verb
    ("lives in", "works at", "opens"). A new value of an attribute names the attribute; a fact
    about the same person that names neither is another fact about them: "Gina's clothing store
    looks great" is no new value of "Gina launched an ad campaign for her clothing store", nor
    "Jon is considering Marley flooring for his dance studio" of "Jon started a dance studio".

    A stored fact that names nothing checkable (no split, or only a name and "is": "Alice is 30")
    is kept to ``nothing_in_common`` alone. Verbs that hold many values ("likes") are no attribute."""
    statement = split_statement(old)
    if statement is None:
        return True
    said = _said(old)
    thing = {_root(w) for w in statement.subject} | set(statement.relation)
    thing = {w for w in thing if w not in _NOT_EVIDENCE} - said.names
    if not thing:
        return True
    new_said = _said(new)
    return bool(thing & (new_said.common | new_said.names))


def may_restate(new: str, stored: str) -> bool:
    """Whether a new fact may state a stored one again in other words, so that a model is asked
    (memory/pipeline/restatements.py): the same numbers and names, at least one of them a value
    (not only whom the facts are about), no denial on one side only, no more content words than
    the stored fact (a restatement adds nothing), no word they share in another tense ("The user
    worked at Google" / "… works at Google"), and no subject that each names a part of the other
    lacks ("the review meeting" / "the budget meeting", "Alice's sister" / "Alice's").

    "Alice was born on March 3." / "Alice's birthday is on March 3." may; "Alice's flight was
    cancelled on March 3." / "Alice's flight is on March 3." may not (it adds "cancelled"), nor
    "Alice was born in March." (other numbers). A model's yes decides the rest."""
    a, b = _said(new), _said(stored)
    if parse_fact(new).negated != parse_fact(stored).negated:
        return False
    if a.common & b.common and sentence_tense(new) != sentence_tense(stored):
        return False  # the same words in another tense: "worked at Google" for "works at"
    if a.numbers != b.numbers or a.names != b.names or len(a.common) > len(b.common):
        return False
    if a.subject is not None and b.subject is not None:
        if a.subject - b.subject and b.subject - a.subject:
            return False
        about = a.subject | b.subject
    else:
        about = frozenset()
    return bool(a.numbers or a.names - about)
