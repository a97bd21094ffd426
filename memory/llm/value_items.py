"""A fact's value read as a list of like items ("Alice has a dog, a cat and a parrot."), so that a
denial of one item keeps the others (memory/llm/fact_decisions.py, ``still_held``). Built on
fact_reading's reading of a fact's relation: where its value starts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.llm.decision_words import (
    AUXILIARIES,
    BE,
    COUNTS,
    DETERMINERS,
    INDEFINITE,
    NEGATIONS,
    PREPOSITIONS,
    SPLIT_TOKEN,
    TOKEN,
)
from memory.llm.fact_reading import (
    _PASSIVE_GET,
    _as_change,
    _read_relation,
    _relation_start,
    _said_of_it,
    _stated,
    content_words,
    fold,
)
from memory.llm.verbs import verb_lemma

# Where the items of a value said as a list meet: "a dog, a cat and a parrot", "a dog or a cat".
_ITEM_BREAK = re.compile(r"(?i),\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


@dataclass(frozen=True)
class ValueItems:
    """A fact's value as a list: ``head`` says whose and which relation ("Alice has "),
    ``items`` the list's items as written ("a dog named Rex", "a cat"), ``tail`` its end (".")."""

    head: str
    items: tuple[str, ...]
    tail: str

    def words(self) -> list[frozenset[str]]:
        """Each item's words that name something, its numbers too: {"dog", "rex"}, {"cat"}."""
        return [item_words(item) for item in self.items]

    def keeping(self, kept: Sequence[str]) -> str:
        """The fact said of ``kept`` items alone: "Alice has a cat.", "Alice has a dog and a
        parrot."."""
        listed = kept[0] if len(kept) == 1 else f"{', '.join(kept[:-1])} and {kept[-1]}"
        return f"{self.head}{listed}{self.tail}"


def item_words(text: str) -> frozenset[str]:
    """The words of an item that name something, numbers included ("20 mg of Lipitor")."""
    tokens = [fold(t) for t in TOKEN.findall(text)]
    return content_words(tokens) | {t for t in tokens if any(c.isdigit() for c in t)}


def value_items(text: str) -> ValueItems | None:
    """The items of a fact's value, a list or one, read in its own words (None when the fact is
    not plainly ``<subject> <verb> <value>``): "Alice has a dog and a cat." -> "Alice has " /
    "a dog", "a cat" / ".". So that a denial of one item can keep the others
    (memory/llm/fact_decisions.py)."""
    said = _stated(text)
    found = list(SPLIT_TOKEN.finditer(said))
    tokens = [m.group() for m in found]
    start = _relation_start(tokens)
    if start is None or tokens[start] == ":" or fold(tokens[start]) in _PASSIVE_GET:
        return None
    if _as_change(tokens, start, start) is not None or _said_of_it(tokens, start, start):
        return None  # read from a change: the value is not where its words are
    relation, end = _read_relation(tokens, start)
    if not relation or end >= len(tokens):
        return None
    value = said[found[end].start() :].rstrip()
    body = value.rstrip(".!;")
    items = tuple(item.strip() for item in _ITEM_BREAK.split(body))
    lead = _shared_lead(items)
    items = (items[0][len(lead) :], *items[1:])
    if not _like_items(items):
        return None  # no list of like things: "20 mg of Lipitor, with food", "Paris and works at …"
    head = said[: found[end].start()] + lead
    return ValueItems(head, items, value[len(body) :])


def _shared_lead(items: tuple[str, ...]) -> str:
    """The words of the first item up to its first preposition, when it starts with a plain word
    (an adjective, a participle) and the other items have no preposition:
    what the list shares, not an item ("allergic to peanuts and shellfish": "allergic to ", the
    items "peanuts" and "shellfish"; read as items, "shellfish" alone would be what Alice is)."""
    if len(items) < 2 or any(_has_preposition(item) for item in items[1:]):
        return ""
    if _item_kind(items[0]) != "word":
        return ""  # "a cup of tea and a biscuit": the first item is a thing of its own
    for i, match in enumerate(SPLIT_TOKEN.finditer(items[0])):
        if i and fold(match.group()) in _LEADS:
            rest = items[0][match.end() :]
            return items[0][: len(items[0]) - len(rest.lstrip())] if rest.strip() else ""
    return ""


# "of" too: "afraid of spiders and snakes" (PREPOSITIONS leaves it out: "20 mg of Lipitor").
_LEADS = PREPOSITIONS | {"of"}


def _has_preposition(item: str) -> bool:
    return any(fold(word) in _LEADS for word in SPLIT_TOKEN.findall(item))


# Words that open a clause, not a list's item: "a dog named Rex, who is 3".
_RELATIVE = {"who", "whom", "whose", "which", "that", "where", "when", "while", "because"}


def _like_items(items: Sequence[str]) -> bool:
    """Whether a value's parts are items of one list: each starts as an item does, and all
    alike, but that a bare word goes with a determined item ("aspirin and 20 mg of Lipitor",
    "jazz and the Beatles"). A name beside other items most often names one of them, not another
    item: "a dog named Rex and Max", "two kids, Tom and Mia", "kids named Leo and Mia" (read as a
    list, a denial of the kids would keep Mia)."""
    kinds = {_item_kind(item) for item in items}
    return None not in kinds and (len(kinds) == 1 or kinds == {"word", "determined"})


def _item_kind(item: str) -> str | None:
    """How a list's item starts, so that a list is told from a value with a clause or a
    qualifier after a comma: a determiner or a count ("a dog", "2 cats", "two cats"), a name
    ("Lyon"), a word ("jazz"); None for what no item starts with: nothing, a preposition ("with
    food"), a verb ("works at Google"), a relative ("who is 3")."""
    words = SPLIT_TOKEN.findall(item)
    if not words:
        return None
    first = fold(words[0])
    if first in DETERMINERS | INDEFINITE | COUNTS or any(c.isdigit() for c in first):
        return "determined"
    if words[0][:1].isupper():
        return "name"
    verb = verb_lemma(first) is not None or first in BE | AUXILIARIES
    if verb or first in PREPOSITIONS | _RELATIVE | NEGATIONS:
        return None
    return "word"
