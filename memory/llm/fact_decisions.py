"""The offline provider's dedup decisions (ADD / UPDATE / DELETE / NONE): deterministic rules that
tell a fact about another thing from a new value of the same thing.

A fact is read as ``<subject> <relation> <value>`` (memory/llm/fact_reading.py: "order A-1 |
ships on | 3 May", "Alice | lives in | Paris").

Numbers, codes, names and nouns before the verb are identifiers: "locker 17" and "locker 18",
"order A-1" and "order A-2", "Anna's birthday" and "Ben's birthday" are different things, so two
facts whose subjects differ are never the same fact: ADD, however alike their words. Only a fact
about the same thing is compared further:

- NONE: same relation, same value (or nearly the same words, the same numbers).
- DELETE: one says it, the other denies it ("Alice no longer lives in Paris"): the denied value is
  part of the stated one ("no longer takes Lipitor" of "takes 20 mg of Lipitor daily"); a denial
  of another value is another fact ("not allergic to shellfish" beside "allergic to peanuts").
  A denial of some items of a listed value is an UPDATE to what still holds, the denial said
  with it: "Alice has a dog and a cat" -> "Alice has a cat; Alice no longer has a dog"
  (``still_held``).
- ADD: a value of another thing, named in the value: "paid 120 dollars for the concert tickets"
  and "paid 80 dollars for the museum tickets", "moved the dentist appointment to May 3" and
  "moved the haircut to May 5" (``fact_reading._thing``: a value's words other than its numbers and times,
  or a one-value verb's object).
- ADD: a value said beside the stored one ("Alice also works at a bakery", "Alice's phone number
  is also 555-9876", "… too", "a second …"): a one-value relation may hold two.
- UPDATE: a new value of the same thing: different numbers in the value ("Alice is 30" -> "31";
  "order A-1 ships on 3 May" -> "on 5 May"), or different words for a relation that holds one
  value at a time (an attribute's value: "the wifi password is x" -> "y"; where one lives, works,
  is called, ...: "Alice lives in Paris" -> "in Berlin").
- ADD: anything else; a relation that holds many values keeps both ("Alice likes pizza", "Alice
  likes sushi"; "Alice is a teacher", "Alice is a mother"), other numbers included when the things
  differ ("takes 20 mg of Lipitor", "takes 50 mg of metformin") or when each is an occasion of its
  own, dated or past ("ran 5 km on 3 May", "ran 10 km on 4 May"). Only the same thing with other
  numbers is a new value of it ("Alice has 2 kids" -> "3 kids"; "takes 20 mg of Lipitor" -> "40").

A sentence whose verb the rules cannot find is compared as a bag of words and numbers, as before
(similar words with other numbers: UPDATE, unless each says words the other lacks). The
rules are a crude stand-in for a model's reading, written to fail towards ADD: a duplicate costs
a line, an overwrite loses what a user said.
"""

from __future__ import annotations

from typing import Literal

from memory.llm.decision_words import (
    ADVERBS,
    MANY_VALUES,
    MONTHS,
    NEGATIONS,
)
from memory.llm.fact_cessation import GIVE_UP
from memory.llm.fact_reading import (
    ParsedFact,
    Statement,
    apart,
    content_words,
    parse_fact,
    split_statement,
)
from memory.llm.value_items import item_words, value_items
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from memory.prompts.same_fact import SameFact, SameFactInput

Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def numbered_apart(a: str, b: str) -> bool:
    """Whether two facts name different things by a number or code before their verbs ("room
    204" and "room 205", "order A-1" and "order A-2"): never one fact, whatever a model says.
    Narrower than the rules' own test (which also tells "Anna's" from "Ben's"), so that a guard
    on a model's answers can rely on it; names are left to the model ("User's" may be "Alice's")."""
    first, second = split_statement(a), split_statement(b)
    if first is None or second is None:
        return False
    numbered = [{w for w in s.subject if any(c.isdigit() for c in w)} for s in (first, second)]
    return bool(numbered[0] or numbered[1]) and numbered[0] != numbered[1]


# Words a denial adds that name no value: "Alice is not vegetarian any more"; nor do the words
# joining a list's items ("no longer has a dog or a cat" of "has a dog and a cat").
_NO_VALUE = ADVERBS | NEGATIONS | {"any", "more", "anymore", "longer", "and", "or"}


def _many_valued(a: Statement, b: Statement) -> bool:
    """Whether both facts say one verb that holds many values ("takes", "ran", "has", "likes")."""
    shared = set(a.relation) & set(b.relation) & MANY_VALUES
    return bool(shared) and not (a.one_value or b.one_value)


def _denies(denied: Statement, stated: Statement) -> bool:
    """Whether a denial is of the stated value: its words and numbers are all the stated one's
    ("no longer takes Lipitor" of "takes 20 mg of Lipitor daily"; not "does not have kids named
    Tom and Mia" of "has 2 kids named Leo and Mia", nor "dislikes country music" of "likes jazz")."""
    return denied.value - _NO_VALUE <= stated.value and denied.value_numbers <= stated.value_numbers


def _dated(numbers: frozenset[str]) -> bool:
    """Whether numbers hold a date: a month's name or a year ("in 2019", "on 3 May")."""
    year = any(n.isdigit() and len(n) == 4 and n[:2] in {"19", "20"} for n in numbers)
    return year or bool(numbers & MONTHS)


def _other_things(new: ParsedFact, old: ParsedFact) -> bool:
    """Whether two facts of one many-valued verb say different things, so that both hold: other
    words in the value ("Lipitor", "metformin"), or other numbers on occasions of their own, each
    dated or told in the past ("ran 5 km on 3 May", "ran 10 km on 4 May"; "visited 3 countries")."""
    a, b = new.statement, old.statement
    assert a is not None and b is not None
    if a.value != b.value:
        return True
    occasions = new.past or old.past or _dated(a.value_numbers) or _dated(b.value_numbers)
    return occasions and a.value_numbers != b.value_numbers


def compare(new: ParsedFact, old: ParsedFact) -> tuple[Event, float]:
    """The event a new fact makes of one stored fact, with how alike they are (to rank several)."""
    core, full = (
        _jaccard(new.words, old.words),
        _jaccard(new.words | new.numbers, old.words | old.numbers),
    )
    same_sign = new.negated == old.negated
    a, b = new.statement, old.statement
    restated = same_sign and new.numbers == old.numbers and full >= 0.8
    if a is not None and b is not None:
        if a.subject != b.subject:
            return "ADD", 0.0  # another locker, order, child: another thing
        if same_sign and a.relation == b.relation:
            if a.value == b.value and a.value_numbers == b.value_numbers:
                return "NONE", 1.0
            if apart(a.thing, b.thing):
                # The values are of different things: "paid 120 dollars for the concert tickets",
                # "paid 80 dollars for the museum tickets"; "moved the dentist appointment to May
                # 3", "moved the haircut to May 5". Both hold, whatever the numbers.
                return "ADD", 0.0
            if a.one_value and b.one_value:
                # "also works at a bakery": a second value beside the first, not instead of it.
                return ("ADD", 0.0) if new.another else ("UPDATE", full)
        many = _many_valued(a, b)
        denied, stated = (a, b) if new.negated else (b, a)
        # "gave up coffee" says no verb: it denies coffee whatever verb said it (GIVE_UP).
        given_up = denied.relation == (GIVE_UP,)
        if not same_sign and (a.relation == b.relation or many or given_up):
            return ("DELETE", core) if _denies(denied, stated) else ("ADD", 0.0)
        if same_sign and many and not restated and _other_things(new, old):
            return "ADD", 0.0  # "takes 20 mg of Lipitor", "takes 50 mg of metformin": both hold
    # Same thing, or two facts the rules cannot split: compared as bags of words and numbers.
    if restated:
        return "NONE", full
    if not same_sign and core >= 0.6:
        return "DELETE", core
    # Other numbers of the same words are a new value; with words on each side the other lacks
    # ("got 85 percent on the biology test", "got 70 percent on the chemistry test"), which thing
    # each number is of cannot be told, and both are kept.
    renumbered = same_sign and new.numbers and old.numbers and new.numbers != old.numbers
    renumbered = renumbered and not new.another  # "a second phone number": beside the first
    if renumbered and full >= 0.5 and not apart(content_words(new.words), content_words(old.words)):
        return "UPDATE", full
    return "ADD", 0.0


def still_held(denial: str, stated: str) -> str | None:
    """A fact listing several values with a denial of some of them taken in: "Alice has a dog
    and a cat." and "Alice no longer has a dog." make "Alice has a cat; Alice no longer has a
    dog." (the denial said too: a merge must say what the new fact says, memory/pipeline/dedup.py,
    and it tells a reader the dog is gone). None when the stated fact lists one value, or the
    denial is of all of them or of none by name. Each item the denial names is dropped, details
    and all ("a dog named Rex")."""
    stated_items, denied_items = value_items(stated), value_items(denial)
    if stated_items is None or denied_items is None or len(stated_items.items) < 2:
        return None
    # The words the stated list shares are no item's ("allergic" of "allergic to peanuts and
    # shellfish"): the denial names an item by the rest.
    shared = item_words(stated_items.head)
    denied = [words - shared for words in denied_items.words() if words - shared]
    kept = [
        item
        for item, words in zip(stated_items.items, stated_items.words(), strict=True)
        if not any(named <= words for named in denied)
    ]
    if not kept or len(kept) == len(stated_items.items):
        return None
    return f"{stated_items.keeping(kept).rstrip('.!;')}; {denial.strip()}"


_PRIORITY: dict[Event, int] = {"NONE": 0, "DELETE": 1, "UPDATE": 2}


def _decide(index: int, content: str, existing: list[tuple[int, str]]) -> FactDecision:
    new = parse_fact(content)
    # (rule priority, -likeness, existing index, event, merged text): NONE first, a duplicate
    # needs nothing else.
    matches: list[tuple[int, float, int, Event, str | None]] = []
    for old_index, old in existing:
        event, score = compare(new, parse_fact(old))
        merged = None
        if event == "DELETE" and new.negated and (kept := still_held(content, old)):
            # "no longer has a dog" of "has a dog and a cat": the cat is still had. Deleted, it
            # would be lost; the fact is updated to what still holds (h214).
            event, merged = "UPDATE", kept
        if event != "ADD":
            matches.append((_PRIORITY[event], -score, old_index, event, merged))
    if not matches:
        return FactDecision(
            new_fact_index=index, event="ADD", existing_index=None, merged_text=None
        )
    _, _, best, event, merged = min(matches)
    # Else the new fact's own text is stored: the rules merge only what a denial leaves.
    return FactDecision(new_fact_index=index, event=event, existing_index=best, merged_text=merged)


def same_fact(p: SameFactInput) -> SameFact:
    """The offline answer: the same fact when the rules read it as a duplicate (NONE)."""
    return SameFact(same=compare(parse_fact(p.new), parse_fact(p.stored))[0] == "NONE")


def decide_facts(p: DecideFactsInput) -> FactDecisions:
    """Each new fact on its own, in the order said: two corrections of one stored fact are two
    decisions on it, and the pipeline applies them in that order (the later one wins)."""
    decisions = []
    for new in sorted(p.new_facts, key=lambda fact: fact.index):
        pairs = sorted((e.index, e.content) for e in p.existing if new.index in e.candidate_for)
        decisions.append(_decide(new.index, new.content, pairs))
    return FactDecisions(decisions=decisions)
