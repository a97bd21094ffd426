"""How the offline rules read a fact: ``<subject> <relation> <value>``. The words before its
verb name the thing it is about, the verb (with its auxiliaries, negation and one preposition) is
the relation, the rest is the value::

    Alice's locker 17 code | is        | 4411
    order A-1              | ships on  | 3 May
    Anna's birthday        | is        | 3 May
    Alice's son Tom        | is        | 7
    Alice                  | lives in  | Paris

Read so by the dedup decisions (memory/llm/fact_decisions.py) and the overlap guard on a model's
answers (memory/llm/fact_overlap.py). A lead-in that says a fact is said again ("As Alice said,
…", "Remember that …") is no part of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memory.fact_words import negates
from memory.llm.decision_words import (
    ADVERBS,
    AUXILIARIES,
    BE,
    DETERMINERS,
    INDEFINITE,
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
from memory.llm.fact_cessation import GIVE_UP, as_denied
from memory.llm.heuristic_corrections import without_replaced_value
from memory.llm.verbs import verb_lemma
from memory.months import may_is_month
from memory.tense import sentence_tense


def _verb_stem(token: str) -> str:
    """An unknown verb's crude lemma: "departs", "departed" -> "depart"."""
    return token.removesuffix("ed") if token.endswith("ed") else token.removesuffix("s")


def _stem(token: str) -> str:
    """A crude stem, so that "likes" meets "like"."""
    return token[:-1] if len(token) > 3 and token[-1] == "s" != token[-2] else token


def fold(raw: str) -> str:
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


def opens_relation(tokens: list[str], i: int) -> bool:
    """Whether tokens[i] is where the verb starts (after a subject of at least one word)."""
    token, folded, before = tokens[i], fold(tokens[i]), tokens[i - 1]
    if folded == GIVE_UP:
        return True
    if folded in BE or folded in AUXILIARIES or folded in NEGATIONS or folded.endswith("n't"):
        return not token[:1].isupper() or token in {":", "="}
    if not token.isalpha() or not token.islower():
        return False
    # "the work address", "Alice's love of jazz": after a determiner or a possessive, a noun.
    if before.casefold() in DETERMINERS or before.endswith(("'s", "'")):
        return False
    if verb_lemma(folded) is not None:
        return True
    if folded in _PASSIVE_GET:  # "Alice's locker code got changed to 7721"
        return i + 1 < len(tokens) and verb_lemma(fold(tokens[i + 1])) is not None
    # An unknown verb, in its -s or -ed form, right after a name or a code: "A-1 departs".
    return _names_a_thing(before) and len(token) > 3 and token.endswith(("s", "ed"))


def without_opener(text: str) -> str:
    return OPENER.sub("", text.replace("\u2019", "'"))


def _stated(text: str) -> str:
    """What a fact states: no lead-in, no value it says it replaces (", not March 3"), and the end
    of a habit said as the denial it is (``as_denied``)."""
    return as_denied(without_replaced_value(without_opener(text)))


def split_statement(text: str) -> Statement | None:
    """``<subject> <relation> <value>``, or None when no verb is found after a subject."""
    return _split(SPLIT_TOKEN.findall(_stated(text)))


# Verbs that say a value was changed, and where the new value follows: "changed Alice's locker
# code to 7721", "Alice's locker code changed, it is now 7721", "…; it's 7721 now".
_CHANGE_VERBS = {"change", "changed", "changes", "update", "updated", "updates", "reset", "resets"}
# "got changed to 7721": the passive's "got" is no verb of its own.
_PASSIVE_GET = {"get", "gets", "got", "gotten"}
# Words that say a value is the new one, not which thing it is of: "Alice's new phone number" is
# her phone number ("New York" is a name: capitalized, it stays). Only of a thing one has one
# value of at a time (``_ONE_VALUED``): "Alice's new dog is named Max" may be a second dog, and
# an overwrite would lose Rex.
_NEW_VALUE = {"new", "current", "updated", "latest"}
_ONE_VALUED = {
    "number", "email", "address", "code", "password", "pin", "phone", "username", "handle",
    "job", "title", "role", "position", "salary", "employer", "manager", "boss", "name",
    "surname", "nickname", "plan", "rate", "price", "deadline", "budget", "birthday",
}  # fmt: skip


def _new_value_of(tokens: list[str], i: int, end: int) -> bool:
    """Whether ``tokens[i]`` ("new", "current") says the value of the one-valued thing right
    after it is the new one ("my new phone number", "her current email"), not which thing it is
    ("my new dog's name" is another dog's name: h210)."""
    if tokens[i] not in _NEW_VALUE:
        return False
    for after in tokens[i + 1 : end]:  # "new locker code": the thing may follow a qualifier
        if after.endswith(("'s", "\u2019s")):
            return False  # "new dog's …": the new one is the dog
        if fold(after) in _ONE_VALUED:
            return True
    return False


def _as_change(tokens: list[str], start: int, verb: int) -> list[str] | None:
    """A change told with its new value, as the statement of that value: "<S> changed <thing> to
    <value>" or "<thing> changed, it is <value>" read as "<thing> is <value>" (else None). The
    subject ends at ``start``; the change verb is at ``verb`` (after "got", a passive's)."""
    if fold(tokens[verb]) not in _CHANGE_VERBS:
        return None
    rest = tokens[verb + 1 :]
    folded = [fold(t) for t in rest]
    cut = next((i for i, w in enumerate(folded) if w in {"to", "it"}), None)
    if cut is None:
        return None
    thing = rest[:cut] or tokens[:start]  # "changed <thing> to", else the subject changed
    value = rest[cut + 1 :]
    if rest[cut].casefold() in {"it's", "it'"} or (folded[cut] == "to" and value):
        value = ["is", *value]
    elif not value or fold(value[0]) not in BE:
        return None  # "changed it to …" said nothing of which thing: read as it is
    return [*thing, *value] if thing and len(value) > 1 else None


# Verbs that say a thing was moved, whose new value a clause about "it" then gives: "Alice's
# flight got moved: it now leaves at 9".
_MOVE_VERBS = {"move", "moved", "moves", "reschedule", "rescheduled", "reschedules"}
_MOVE_VERBS |= {"postpone", "postponed", "postpones", "delay", "delayed", "delays"}
_MOVE_VERBS |= {"shift", "shifted", "shifts", "push", "pushed", "pushes"}


def _said_of_it(tokens: list[str], start: int, verb: int) -> list[str] | None:
    """ "<thing> changed/moved[:,] it <verb> <value>" as "<thing> <verb> <value>": the value said
    in the clause about "it" is the thing's (else None). Only of an owned or definite thing
    ("Alice's flight", "the meeting"): "Alice moved, it was hard" says nothing of Alice."""
    if fold(tokens[verb]) not in _CHANGE_VERBS | _MOVE_VERBS:
        return None
    owned = fold(tokens[0]) in DETERMINERS - INDEFINITE or any(
        t.endswith(("'s", "'")) for t in tokens[:start]
    )
    after = verb + 1
    while after < len(tokens) and (tokens[after] == ":" or fold(tokens[after]) in ADVERBS):
        after += 1  # "got moved again: it …"
    if not owned or after >= len(tokens) or tokens[after].casefold() != "it":
        return None
    clause = tokens[after:]
    if _split(clause) is None:
        return None  # no verb of its own: "changed it" says nothing
    return [*tokens[:start], *clause[1:]]


def _relation_start(tokens: list[str]) -> int | None:
    return next((i for i in range(1, len(tokens)) if opens_relation(tokens, i)), None)


def _split(tokens: list[str]) -> Statement | None:
    start = _relation_start(tokens)
    if start is None:
        return None
    if tokens[start] == ":" and (clause := _split(tokens[start + 1 :])) is not None:
        return clause  # "Alice read the memo: the budget is $65,000" states the clause
    verb = start + 1 if fold(tokens[start]) in _PASSIVE_GET else start
    if (change := _as_change(tokens, start, verb)) is not None and change != tokens:
        return _split(change)
    if (about_it := _said_of_it(tokens, start, verb)) is not None:
        return _split(about_it)
    # Determiners and adverbs name nothing ("really", but not "Emily": a capital is a name), nor
    # does a word saying the value is the new one ("Alice's new email" is her email).
    subject = frozenset(
        _stem(fold(t))
        for i, t in enumerate(tokens[:start])
        if fold(t) not in DETERMINERS | ADVERBS
        and not (t.islower() and (t.endswith("ly") or _new_value_of(tokens, i, start)))
    )
    relation, end = _read_relation(tokens, start)
    if not relation or not subject:
        return None
    # "has", "had" before another verb are auxiliaries; "changed to", "moved to" (a deadline,
    # a meeting, a person), "became" read as "is".
    if len(relation) > 1 and relation[0] == "have":
        relation.pop(0)
    joined = " ".join(relation).replace("change to", "be").replace("move to", "be")
    relation = list(dict.fromkeys(joined.split()))  # "was now changed to" -> "be"
    rest = [fold(t) for t in tokens[end:]]
    numeric = [number_at(tokens, i) for i in range(end, len(tokens))]
    value = frozenset(
        _stem(w) for w, n in zip(rest, numeric, strict=True) if not n and w not in STOPWORDS
    )
    numbers = frozenset(w for w, n in zip(rest, numeric, strict=True) if n)
    one_value = _one_value(tokens[:start], relation, rest)
    return Statement(
        subject=subject,
        relation=tuple(relation),
        value=value,
        value_numbers=numbers,
        one_value=one_value,
        thing=_thing(relation, rest, one_value=one_value),
    )


def _read_relation(tokens: list[str], start: int) -> tuple[list[str], int]:
    """The relation's lemmas from ``tokens[start]`` on, and where its value starts."""
    relation: list[str] = []
    end = start
    while end < len(tokens):
        folded = fold(tokens[end])
        lemma = "be" if folded in BE else verb_lemma(folded)
        if folded == GIVE_UP and not relation:
            relation.append(GIVE_UP)
        elif negates(tokens, end) or folded in ADVERBS:
            pass  # the negation is compared on its own; "now", "still" change nothing
        elif (folded in AUXILIARIES or folded in _PASSIVE_GET) and lemma is None:
            pass  # "will", "does", "got" (changed): the verb that follows says the relation
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
    return relation, end


# Words that name nothing in a value: "for", "the", "not", "still".
_FUNCTION = PREPOSITIONS | DETERMINERS | STOPWORDS | ADVERBS | NEGATIONS
_FUNCTION |= {"of", "and", "or", "any", "more", "anymore"}


def content_words(words: Iterable[str]) -> frozenset[str]:
    """Words that name something: no numbers, function words, days or times."""
    named = (_stem(w) for w in words if not is_number(w) and w not in _FUNCTION | WHEN)
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


def is_number(token: str) -> bool:
    return any(c.isdigit() for c in token) or token in MONTHS


def number_at(written: Sequence[str], i: int) -> bool:
    """``is_number`` of ``written[i]`` read in place (words as written, case kept): "may" is a
    month only where it is no verb ("3 May", not "Alice may move": memory.months.may_is_month)."""
    folded = fold(written[i])
    if folded == "may":
        return may_is_month(written, i)
    return is_number(folded)


@dataclass(frozen=True)
class ParsedFact:
    """All of a fact's words and numbers (for likeness), its negation, and its statement."""

    words: frozenset[str]
    numbers: frozenset[str]
    negated: bool
    statement: Statement | None
    past: bool = False  # said in the past tense: an occasion ("ran 5 km"), not a standing state
    # Said as a value beside another ("also works at a bakery", "a second phone number"): see
    # ``_ANOTHER``.
    another: bool = False


# Words that give a value beside the one known, not instead of it: "Alice also works at a bakery",
# "Alice's phone number is also 555-9876", "… as well", "… too", "another", "a second home". A
# lead-in "Also, …" (furthermore) is no part of the fact (``OPENER``); "too" before a word is a
# degree ("too expensive"), not another value.
_ANOTHER = re.compile(
    r"(?i)\b(?:also|another|second|additional|extra)\b|\b(?:too|as well)\s*(?:[.,;!]|$)"
)


# Where a sentence's clauses meet: "…, I also changed my email", "…: it now leaves at 9", "… and
# my email changed too" (not the comma of "$65,000" nor the colon of "10:30": no space follows).
_CLAUSE_BREAK = re.compile(r"(?i)\s*[,;:]\s+|\s+(?:and|but)\s+")


def _value_clause(text: str) -> str:
    """The clause that gives the fact's value: the first that states one on its own (a subject,
    a verb and a value after it), else the whole text. "Alice's phone number is 555-2222, Alice
    also changed Alice's email" gives it in its first clause; "Alice's flight also got moved: it
    now leaves at 9" in its second."""
    for clause in _CLAUSE_BREAK.split(text):
        statement = split_statement(clause)
        if statement is not None and (statement.value or statement.value_numbers):
            return clause
    return text


def parse_fact(text: str) -> ParsedFact:
    words: set[str] = set()
    numbers: set[str] = set()
    negated = False
    text = _stated(text)  # "As Alice said, …", ", not March 3" say nothing of the fact
    written = TOKEN.findall(text)  # with their case: "May" the month, "may" the verb
    for i, raw in enumerate(written):
        token = raw.casefold().removesuffix("'s")
        if negates(written, i):  # not the "No" of "loves No Doubt": a name's
            negated = True
        elif token.startswith("dislike"):  # "dislikes" is "likes" negated
            negated = True
            words.add("like")
        elif number_at(written, i):
            numbers.add(token)
        elif token not in STOPWORDS:
            words.add(_stem(token))
    statement, past = split_statement(text), sentence_tense(text) == "past"
    # Only "also" or "too" of the value says it is another: not of another clause ("my number is
    # 555-2222, I also changed my email" corrects the number).
    another = _ANOTHER.search(_value_clause(text)) is not None
    return ParsedFact(frozenset(words), frozenset(numbers), negated, statement, past, another)
