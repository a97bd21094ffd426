"""The offline provider's dedup decisions (ADD / UPDATE / DELETE / NONE): deterministic rules that
tell a fact about another thing from a new value of the same thing.

A fact is read as ``<subject> <relation> <value>``: the words before its verb name the thing it is
about, the verb (with its auxiliaries, negation and one preposition) is the relation, the rest is
the value::

    Alice's locker 17 code | is        | 4411
    order A-1              | ships on  | 3 May
    Anna's birthday        | is        | 3 May
    Alice's son Tom        | is        | 7
    Alice                  | lives in  | Paris

Numbers, codes, names and nouns before the verb are identifiers: "locker 17" and "locker 18",
"order A-1" and "order A-2", "Anna's birthday" and "Ben's birthday" are different things, so two
facts whose subjects differ are never the same fact: ADD, however alike their words. Only a fact
about the same thing is compared further:

- NONE: same relation, same value (or nearly the same words, the same numbers).
- DELETE: one says it, the other denies it ("Alice no longer lives in Paris"): the denied value is
  part of the stated one ("no longer takes Lipitor" of "takes 20 mg of Lipitor daily"); a denial
  of another value is another fact ("not allergic to shellfish" beside "allergic to peanuts").
- ADD: a value of another thing, named in the value: "paid 120 dollars for the concert tickets"
  and "paid 80 dollars for the museum tickets", "moved the dentist appointment to May 3" and
  "moved the haircut to May 5" (``_thing``: a value's words other than its numbers and times,
  or a one-value verb's object).
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
(similar words with other numbers: UPDATE, unless each says words the other lacks). A lead-in
that says a fact is said again ("As Alice said, …", "Remember that …") is no part of it. The
rules are a crude stand-in for a model's reading, written to fail towards ADD: a duplicate costs
a line, an overwrite loses what a user said.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from memory.llm.decision_words import (
    ADVERBS,
    AUXILIARIES,
    BARE_VERBS,
    BE,
    DETERMINERS,
    INDEFINITE,
    IRREGULAR,
    MANY_VALUES,
    MONTHS,
    NEGATIONS,
    ONE_VALUE,
    OPENER,
    PREPOSITIONS,
    SPLIT_TOKEN,
    STOPWORDS,
    TOKEN,
    WHEN,
)
from memory.prompts.decide_facts import DecideFactsInput, FactDecision, FactDecisions
from memory.prompts.same_fact import SameFact, SameFactInput
from memory.tense import sentence_tense

Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]


def _lemma(token: str) -> str | None:
    """The verb a token is a form of, when it is one the rules know (else None)."""
    if token in IRREGULAR:
        return IRREGULAR[token]
    known = ONE_VALUE | MANY_VALUES
    if token in BARE_VERBS or token in {"born", "due"}:
        return token
    for suffix in ("s", "es", "ies", "ed", "ied", "ing"):
        if not token.endswith(suffix):
            continue
        stem = token[: -len(suffix)]
        # "lives" "live", "watches" "watch", "studies" "study", "moved" "move", "shipped" "ship"
        for lemma in (stem, stem + "e", stem + "y", stem[:-1]):
            if lemma in known and (lemma != stem[:-1] or stem[-1:] == stem[-2:-1]):
                return lemma
    return None


def _verb_stem(token: str) -> str:
    """An unknown verb's crude lemma: "departs", "departed" -> "depart"."""
    return token.removesuffix("ed") if token.endswith("ed") else token.removesuffix("s")


def _stem(token: str) -> str:
    """A crude stem, so that "likes" meets "like"."""
    return token[:-1] if len(token) > 3 and token[-1] == "s" != token[-2] else token


def _fold(raw: str) -> str:
    return raw.casefold().removesuffix("'s").removesuffix("'")


def _names_a_thing(raw: str) -> bool:
    """A name or a code right before a word: "Alice", "A-1", "17" (not "Alice's", a possessive)."""
    return not raw.endswith(("'s", "'")) and (raw[:1].isupper() or any(c.isdigit() for c in raw))


@dataclass(frozen=True)
class Statement:
    """A fact split at its verb: ``subject`` names the thing, ``relation`` the verb (lemmas, "be"
    for every copula), ``value`` and ``value_numbers`` what it says of the thing."""

    subject: frozenset[str]
    relation: tuple[str, ...]
    value: frozenset[str]
    value_numbers: frozenset[str]
    one_value: bool  # a new value replaces the old one
    # The value's words that name what it is a value of, not the value: see ``_thing``.
    thing: frozenset[str] = frozenset()


def _opens_relation(tokens: list[str], i: int) -> bool:
    """Whether tokens[i] is where the verb starts (after a subject of at least one word)."""
    token, folded, before = tokens[i], _fold(tokens[i]), tokens[i - 1]
    if folded in BE or folded in AUXILIARIES or folded in NEGATIONS or folded.endswith("n't"):
        return not token[:1].isupper() or token in {":", "="}
    if not token.isalpha() or not token.islower():
        return False
    # "the work address", "Alice's love of jazz": after a determiner or a possessive, a noun.
    if before.casefold() in DETERMINERS or before.endswith(("'s", "'")):
        return False
    if _lemma(folded) is not None:
        return True
    # An unknown verb, in its -s or -ed form, right after a name or a code: "A-1 departs".
    return _names_a_thing(before) and len(token) > 3 and token.endswith(("s", "ed"))


def _without_opener(text: str) -> str:
    return OPENER.sub("", text.replace("\u2019", "'"))


def split_statement(text: str) -> Statement | None:
    """``<subject> <relation> <value>``, or None when no verb is found after a subject."""
    return _split(SPLIT_TOKEN.findall(_without_opener(text)))


def _split(tokens: list[str]) -> Statement | None:
    start = next((i for i in range(1, len(tokens)) if _opens_relation(tokens, i)), None)
    if start is None:
        return None
    if tokens[start] == ":" and (clause := _split(tokens[start + 1 :])) is not None:
        return clause  # "Alice read the memo: the budget is $65,000" states the clause
    # Determiners and adverbs name nothing ("really", but not "Emily": a capital is a name).
    subject = frozenset(
        _stem(_fold(t))
        for t in tokens[:start]
        if _fold(t) not in DETERMINERS | ADVERBS and not (t.islower() and t.endswith("ly"))
    )
    relation: list[str] = []
    end = start
    while end < len(tokens):
        folded = _fold(tokens[end])
        lemma = "be" if folded in BE else _lemma(folded)
        if folded in NEGATIONS or folded.endswith("n't") or folded in ADVERBS:
            pass  # the negation is compared on its own; "now", "still" change nothing
        elif folded in AUXILIARIES and lemma is None:
            pass  # "will", "does": the verb that follows says the relation
        elif lemma is not None:
            relation.append(lemma)
        elif not relation and folded in ONE_VALUE | MANY_VALUES:
            relation.append(folded)  # a bare verb after "does not", "will": "does not take"
        elif end == start:
            relation.append(_verb_stem(folded))  # an unknown verb after a name: "A-1 departs"
        elif folded in PREPOSITIONS and relation and relation[-1] not in PREPOSITIONS:
            relation.append(folded)
        else:
            break
        end += 1
    if not relation or not subject:
        return None
    # "has", "had" before another verb are auxiliaries; "changed to", "became" read as "is".
    if len(relation) > 1 and relation[0] == "have":
        relation.pop(0)
    joined = " ".join(relation).replace("change to", "be")
    relation = list(dict.fromkeys(joined.split()))  # "was now changed to" -> "be"
    rest = [_fold(t) for t in tokens[end:]]
    value = frozenset(_stem(w) for w in rest if not _is_number(w) and w not in STOPWORDS)
    numbers = frozenset(w for w in rest if _is_number(w))
    one_value = _one_value(tokens[:start], relation, rest)
    return Statement(
        subject=subject,
        relation=tuple(relation),
        value=value,
        value_numbers=numbers,
        one_value=one_value,
        thing=_thing(relation, rest, one_value=one_value),
    )


# Words that name nothing in a value: "for", "the", "not", "still".
_FUNCTION = PREPOSITIONS | DETERMINERS | STOPWORDS | ADVERBS | NEGATIONS
_FUNCTION |= {"of", "and", "or", "any", "more", "anymore"}


def content_words(words: Iterable[str]) -> frozenset[str]:
    """Words that name something: no numbers, function words, days or times."""
    named = (_stem(w) for w in words if not _is_number(w) and w not in _FUNCTION | WHEN)
    return frozenset(named) - WHEN  # "mondays" too


def _thing(relation: list[str], rest: list[str], *, one_value: bool) -> frozenset[str]:
    """The words of a value that name what it is a value of, not the value itself.

    A verb that holds one value at a time has a value after its preposition ("lives in Paris",
    "ships on 3 May") or after "is" ("the wifi password is x"): none of those words names a thing
    apart from the subject; a transitive one names one by its object, the words before the value's
    first preposition ("moved [the dentist appointment] to May 3", "moved [the couch] to the
    garage"). Any other verb gives its value in numbers and times only; every other word says of
    what ("paid 120 dollars for [the concert tickets]", "scored 92 on [the math exam]")."""
    if not one_value:
        return content_words(rest)
    if relation[0] == "be" or relation[-1] in PREPOSITIONS:
        return frozenset()
    cut = next((i for i, w in enumerate(rest) if w in PREPOSITIONS), 0)
    return content_words(rest[:cut])


def apart(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether each of two sets of words names something the other does not ("concert tickets"
    / "museum tickets"); one that names more ("the appointment" / "the dentist appointment")
    may be the same thing, said more fully."""
    return bool(a - b) and bool(b - a)


def _one_value(subject: list[str], relation: list[str], value: list[str]) -> bool:
    """Whether the relation holds one value at a time: a known one-value verb, or "is" naming an
    attribute's value (a possessive or definite subject, "Alice's email", "the wifi password",
    and a value that is no class: "Alice is a teacher" and "Alice is a mother" are both true)."""
    if any(lemma in ONE_VALUE for lemma in relation):
        return True
    attribute = subject[0].casefold() in DETERMINERS - INDEFINITE or any(
        t.endswith(("'s", "'")) for t in subject
    )
    return relation[0] == "be" and attribute and bool(value) and value[0] not in INDEFINITE


def _is_number(token: str) -> bool:
    return any(c.isdigit() for c in token) or token in MONTHS


@dataclass(frozen=True)
class ParsedFact:
    """All of a fact's words and numbers (for likeness), its negation, and its statement."""

    words: frozenset[str]
    numbers: frozenset[str]
    negated: bool
    statement: Statement | None
    past: bool = False  # said in the past tense: an occasion ("ran 5 km"), not a standing state


def parse_fact(text: str) -> ParsedFact:
    words: set[str] = set()
    numbers: set[str] = set()
    negated = False
    text = _without_opener(text)  # "As Alice said, …" says nothing of the fact
    for token in TOKEN.findall(text.casefold()):
        token = token.removesuffix("'s")
        if token in NEGATIONS or token.endswith("n't"):
            negated = True
        elif token.startswith("dislike"):  # "dislikes" is "likes" negated
            negated = True
            words.add("like")
        elif _is_number(token):
            numbers.add(token)
        elif token not in STOPWORDS:
            words.add(_stem(token))
    statement, past = split_statement(text), sentence_tense(text) == "past"
    return ParsedFact(frozenset(words), frozenset(numbers), negated, statement, past)


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


# Words a denial adds that name no value: "Alice is not vegetarian any more".
_NO_VALUE = ADVERBS | NEGATIONS | {"any", "more", "anymore", "longer"}


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
                return "UPDATE", full
        many = _many_valued(a, b)
        if not same_sign and (a.relation == b.relation or many):
            denied, stated = (a, b) if new.negated else (b, a)
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
    if renumbered and full >= 0.5 and not apart(content_words(new.words), content_words(old.words)):
        return "UPDATE", full
    return "ADD", 0.0


_PRIORITY: dict[Event, int] = {"NONE": 0, "DELETE": 1, "UPDATE": 2}


def _decide(index: int, content: str, existing: list[tuple[int, str]]) -> FactDecision:
    new = parse_fact(content)
    # (rule priority, -likeness, existing index, event): NONE first, a duplicate needs nothing else.
    matches: list[tuple[int, float, int, Event]] = []
    for old_index, old in existing:
        event, score = compare(new, parse_fact(old))
        if event != "ADD":
            matches.append((_PRIORITY[event], -score, old_index, event))
    if not matches:
        return FactDecision(
            new_fact_index=index, event="ADD", existing_index=None, merged_text=None
        )
    _, _, best, event = min(matches)
    # The new fact's own text is stored: the rules never merge, so they send no merged_text.
    return FactDecision(new_fact_index=index, event=event, existing_index=best, merged_text=None)


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
