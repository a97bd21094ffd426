"""A message the model passed over, read again alone (facts.extract_facts, in the same step).

A small model reading a window of many messages passes some over: Qwen2.5-Coder-1.5B, given
"the budget was raised to $70,000" ... "Sorry, I misread the memo: the total budget is
$65,000" ... "the deadline moved to January 20, 2027", answered the first and the third and
never the correction (samples/corrections.json, temperature 0), and a prompt that asks for
corrections made it do so in half of the runs only. The same message alone, it answered every
time (docs/local_models.md). So after the window's answer, a person's message that holds a
number, code or name no kept fact writes, and that no kept fact sharing a word with it cites, is
asked about alone: what it says is kept, or the model's second look finds nothing in it.
Bounded per window (facts.reread_messages): the look is for what a model missed, not a second
extraction of the window.

Not for the offline rules (``deterministic`` providers): they read every message by itself
already, so alone a message answers the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.ids import content_hash
from memory.models import StoredMessage
from memory.pipeline.sources import shares_words
from memory.pipeline.types import NewFact
from memory.speakers import by_person

# A capitalised word that does not open a sentence: a name ("Carla", "Lisbon", "QX7"). The
# opening word of a sentence is capitalised whatever it is ("Sorry", "Also").
_NAME = re.compile(r"(?<![.!?:;\"'(]\s)(?<!^)\b[A-Z][\w'-]*[A-Za-z0-9]")
_THOUSANDS = re.compile(r"(?<=\d)[,.\u202f\u00a0](?=\d{3}\b)")
_DIGITS = re.compile(r"\d+")
_WORD = re.compile(r"[\w'-]+")
# Capitalised wherever they stand: "I" and its contractions are no name.
_PRONOUNS = frozenset({"i", "i'm", "i've", "i'll", "i'd"})


def specifics(text: str) -> frozenset[str]:
    """The numbers and names ``text`` writes, compared loosely: each run of digits without its
    leading zeros, thousands separators dropped ("$65,000" and "65000": 65000; "2027-01-20"
    and "January 20, 2027" share 20 and 2027), and names case-folded."""
    numbers = {d.lstrip("0") or "0" for d in _DIGITS.findall(_THOUSANDS.sub("", text))}
    names = {m.group(0).casefold() for m in _NAME.finditer(text)} - _PRONOUNS
    return frozenset(numbers | names)


def passed_over(
    messages: Sequence[StoredMessage],
    kept: Sequence[NewFact],
    limit: int,
    answered: Sequence[str] = (),
) -> list[StoredMessage]:
    """The first ``limit`` messages of a person (a user, or a known person in another role)
    that hold a number or name no kept fact writes, and that no kept fact sharing a word with
    them cites (a small model cites a message off by one: "the deadline moved to January 20"
    given the number of the message before it, "the budget is $65,000", which it passed over).
    ``answered``: the answer's texts, kept or not: a message the model did state, whose fact
    the rules dropped (user memory in a group chat), would be stated and dropped again."""
    if limit <= 0 or len(messages) < 2:
        return []
    texts = [*(fact.content for fact in kept), *answered]
    written = frozenset().union(*(specifics(text) for text in texts))
    # Who speaks is no news ("Thanks, Eve!"): the speakers' names are not what a fact lacks.
    written |= {w.casefold() for m in messages for w in _WORD.findall(m.name or "")}

    def read(message: StoredMessage) -> bool:
        return any(
            message.message_id in fact.source_message_ids
            and shares_words(fact.content, message.content)
            for fact in kept
        )

    found = [m for m in messages if by_person(m) and specifics(m.content) - written and not read(m)]
    return found[:limit]


def merged(
    first: Sequence[NewFact],
    again: Sequence[tuple[StoredMessage, Sequence[NewFact]]],
    messages: Sequence[StoredMessage],
    limit: int,
) -> list[NewFact]:
    """The window's facts in the order they were said, as the decision step reads a
    correction after what it corrects: the first answer's in its own order, each message's
    second look after the first answer's facts said by it (at their latest cited message, where
    they were complete; one that cites none, by the end of the window: memory/pipeline/
    sources.py ``said_at``). A text already kept is not
    kept again; at most ``limit``, never one of the first answer's left out for a second look's
    (it may be the correction of what the look found); indices renumbered."""
    seq = {m.message_id: m.seq for m in messages}
    end = max(seq.values(), default=0) + 1

    def said(fact: NewFact) -> int:  # where a fact of the first answer stands in the window
        return max((seq.get(i, end) for i in fact.source_message_ids), default=end)

    out = [(said(f), f) for f in first[:limit]]
    seen = {content_hash(f.content) for f in first}
    for message, facts in again:
        new: list[NewFact] = []
        for fact in facts:
            key = content_hash(fact.content)
            if key not in seen and len(out) + len(new) < limit:
                seen.add(key)
                new.append(fact)
        at = max((n + 1 for n, (s, _) in enumerate(out) if s <= message.seq), default=0)
        out[at:at] = [(message.seq, f) for f in new]  # said in that message, whatever it cites
    return [f.model_copy(update={"index": n}) for n, (_, f) in enumerate(out)]
