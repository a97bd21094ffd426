"""What two facts have in common, word by word: the rules that stand after a model's dedup
decision (memory/pipeline/dedup.py, memory/pipeline/restatements.py).

- ``nothing_in_common``: no word but the names both are about; a model's change of one by the
  other is refused.
- ``keeps_the_thing``: a change names the stored fact's attribute or its verb; one that names
  neither is another fact about the same person, and a model's change is refused too.
- ``may_restate``: the same numbers and names, nothing added, denied or in another tense; a model
  is asked whether the new fact states the stored one again.
- ``another_value``: what a new fact says that the stored one does not (a number, a code, a name,
  a denial, a tense, another value word); a model's NONE, which would drop the new fact as
  already stored, is refused.
- ``another_owner``: the two facts are two named people's things ("Alice's locker code" /
  "Bob's locker code"); a model's UPDATE or DELETE of one by the other is refused.
- ``another_thing``: the two facts give numbers to different things ("paid 120 dollars for the
  concert tickets" / "paid 80 dollars for the museum tickets", "the review meeting is at 3pm" /
  "the budget meeting is at 4pm"); a model's UPDATE or DELETE of one by the other is refused.
- ``merge_loses``: a model's merged text lacks a number or name of the new fact, or holds one
  neither fact says; the new fact's own text is stored instead.

They read facts with the offline rules' own reading (memory/llm/fact_decisions.py), and numbers
and codes exactly, sign, currency and case (memory/fact_words.py ``values``).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.fact_words import values
from memory.llm.decision_words import (
    ADVERBS,
    AUXILIARIES,
    BE,
    DETERMINERS,
    MANY_VALUES,
    NEGATIONS,
    PREPOSITIONS,
    SPLIT_TOKEN,
    STOPWORDS,
    TOKEN,
)
from memory.llm.fact_reading import (
    apart,
    content_words,
    fold,
    is_number,
    opens_relation,
    parse_fact,
    split_statement,
    without_opener,
)
from memory.llm.verbs import verb_lemma
from memory.tense import Tense
from memory.tense import sentence_tense as _sentence_tense

# Words that never tell which fact a sentence states: function words, owners every fact may
# name, and verbs that hold many values ("Alice likes pizza", "Alice likes sushi": both hold).
_NOT_EVIDENCE = DETERMINERS | PREPOSITIONS | BE | AUXILIARIES | ADVERBS | NEGATIONS
_NOT_EVIDENCE |= STOPWORDS | MANY_VALUES | {"and", "or", "but", "of", "than", "so", "very"}
_NOT_EVIDENCE |= {"i", "me", "we", "us", "you", "he", "him", "she", "it", "they", "them"}
_NOT_EVIDENCE |= {"who", "which", "what", "when", "where", "there", "here", "more", "most"}
_NOT_EVIDENCE |= {"user", "agent", "assistant", "new", "old", "previous", "current", "former"}
_NOT_EVIDENCE |= {"get", "got", "make", "do", "go", "have", "want", "plan", "like"}


def sentence_tense(text: str) -> Tense | None:
    """The fact's tense, its opener aside: "As Alice said, …" says it again, not in the past."""
    return _sentence_tense(without_opener(text))


def _root(word: str) -> str:
    """A word's crude root, so that "opens" meets "opening" and "dance" meets "dancing"."""
    if (lemma := verb_lemma(word)) is not None:
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
    text = without_opener(text)
    names: set[str] = set()
    common: set[str] = set()
    numbers: set[str] = set()
    for raw in TOKEN.findall(text):
        folded = fold(raw).strip("$.,:")
        if is_number(folded):
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
    # The verb as its lemma and by its root, as the new fact's words are: "move" meets "moved",
    # "smoke" (of a verb the rules do not know, "smokes") meets "smoking".
    verb = {form for w in statement.relation for form in (w, _root(w)) if w not in _NOT_EVIDENCE}
    thing = {_root(w) for w in statement.subject} | verb
    thing = {w for w in thing if w not in _NOT_EVIDENCE} - said.names
    if not thing:
        return True
    new_said = _said(new)
    return bool(thing & (new_said.common | new_said.names))


def restatement_keys(text: str) -> frozenset[str]:
    """The numbers and names a text's restatement must hold, every one (``may_restate``): what an
    index of many texts finds its candidates by."""
    said = _said(text)
    return said.numbers | said.names


def may_restate(new: str, stored: str) -> bool:
    """Whether a new fact may state a stored one again in other words, so that a model is asked
    (memory/pipeline/restatements.py): the same numbers and names, at least one of them a value
    (not only whom the facts are about), no denial on one side only, no more content words than
    the stored fact (a restatement adds nothing), no word they share in another tense ("The user
    worked at Google" / "… works at Google"), and no subject that each names a part of the other
    lacks ("the review meeting" / "the budget meeting", "Alice's sister" / "Alice's").

    "Alice was born on March 3." / "Alice's birthday is on March 3." may; "Alice's flight was
    cancelled on March 3." / "Alice's flight is on March 3." may not (it adds "cancelled"), nor
    "Alice was born in March." (other numbers). A model's yes decides the rest. Never where
    ``another_value`` sees something the stored fact lacks ("€50,000" for "$50,000", "shellfish"
    for "peanuts"): a NONE the rules refuse is not asked for again."""
    if another_value(new, stored) is not None:
        return False
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


def another_value(new: str, stored: str) -> str | None:
    """What ``new`` says that ``stored`` does not, where the rules can see it; None when they see
    nothing. A model's NONE (the new fact is already stored) is refused for it, and the new fact
    ADDed: a NONE drops what was said, so it stands only where nothing of it would be lost.

    - a number or code ``stored`` lacks, exactly (sign, currency, case: "555-9999" for
      "555-1234", "May 5" for "May 3", "50 mg" for "20 mg", "tr0ub4dor" for "Tr0ub4dor");
    - a name ``stored`` does not write ("Berlin" for "Paris", "Bob's" for "Alice's");
    - a denial on one side only ("Alice no longer lives in Paris");
    - the same words or verb in another tense ("Alice was a nurse", "Alice worked at Google");
    - a subject naming a part the other's lacks, both ways ("the budget meeting" / "the review
      meeting");
    - another value word, both ways ("allergic to shellfish" / "allergic to peanuts").

    Not a reason: fewer words, more words of no value, other words for the verb ("Alice moved
    to Lisbon" / "Alice now lives in Lisbon", "Bob turned 40" / "Bob is 40 years old"): those
    are a restatement's, and ``may_restate``'s caution (a value to compare, no word added) is for
    asking a model again, not for overruling its NONE."""
    if held := sorted(values(new) - values(stored)):
        return f"it holds {', '.join(held)}, which the stored fact does not"
    a, b = _said(new), _said(stored)
    if held := sorted(a.numbers - b.numbers):
        return f"it holds {', '.join(held)}, which the stored fact does not"
    if named := sorted(a.names - b.names - b.common):
        return f"it names {', '.join(named)}, which the stored fact does not"
    if parse_fact(new).negated != parse_fact(stored).negated:
        return "one of them denies what the other says"
    if sentence_tense(new) != sentence_tense(stored):
        forms, stored_forms = _forms(new), _forms(stored)
        shared = forms.keys() & stored_forms.keys()
        if forms == stored_forms or any(forms[w] != stored_forms[w] for w in shared):
            return "it says it in another tense"
    first, second = split_statement(new), split_statement(stored)
    if first is None or second is None:
        return None
    if first.subject - second.subject and second.subject - first.subject:
        return "it is about another thing"
    said, known = _value_words(first.value), _value_words(second.value)
    if said - known and known - said:
        return f"it says {', '.join(sorted(said - known))} where the stored fact says " + ", ".join(
            sorted(known - said)
        )
    return None


def _forms(text: str) -> dict[str, frozenset[str]]:
    """The fact's content words by root, each with the forms it is written in."""
    forms: dict[str, set[str]] = {}
    for raw in TOKEN.findall(without_opener(text)):
        folded = fold(raw).strip("$.,:")
        if folded and not is_number(folded) and folded not in _NOT_EVIDENCE:
            forms.setdefault(_root(folded), set()).add(folded)
    return {root: frozenset(written) for root, written in forms.items()}


def _value_words(value: frozenset[str]) -> frozenset[str]:
    return frozenset(_root(w) for w in value if w not in _NOT_EVIDENCE) - _NOT_EVIDENCE


# Words before a possessive name that say no one's name: titles, and owners every fact may name.
_TITLES = {"dr", "mr", "mrs", "ms", "mx", "miss", "prof", "professor", "sir", "dame", "st"}
_TITLES |= {"aunt", "uncle", "saint", "captain", "coach", "judge", "president"}
_GENERIC_OWNERS = {"user", "users", "agent", "assistant"}


def another_owner(new: str, stored: str) -> str | None:
    """Whose the two facts' things are, when both subjects name it by a possessive proper name
    and the names differ ("Alice's locker code" / "Bob's locker code", "Dr. Smith's office hours"
    / "Dr. Jones's office hours"): two people's things, never one fact, so a model's UPDATE or
    DELETE of one by the other is refused. A generic owner ("User's", "the user's", "my") names no
    one (the user may be Alice); names that share a word ("Alice Smith's" / "Alice's") may be one
    person."""
    first, second = _owners(new), _owners(stored)
    if not first or not second or first & second:
        return None
    return f"it is {'/'.join(sorted(first))}'s, the stored fact {'/'.join(sorted(second))}'s"


def _owners(text: str) -> frozenset[str]:
    """The words of the proper names written with a possessive before the fact's verb."""
    tokens = SPLIT_TOKEN.findall(without_opener(text))
    verb = next((i for i in range(1, len(tokens)) if opens_relation(tokens, i)), 0)
    subject = tokens[:verb]
    names: set[str] = set()
    for end, token in enumerate(subject):
        if not token.endswith(("'s", "'")) or not token[:1].isupper():
            continue
        start = end
        while start > 0 and subject[start - 1][:1].isupper() and "'" not in subject[start - 1]:
            start -= 1  # "Dr. Smith's", "Alice Smith's": the name's words before its last
        name = {fold(w) for w in subject[start : end + 1]} - _TITLES - DETERMINERS
        if name and not name <= _GENERIC_OWNERS:
            names |= name
    return frozenset(names)


def another_thing(new: str, stored: str) -> str | None:
    """Why ``new`` gives its number to another thing than the one ``stored`` gives its own to,
    when the rules can see it; None when they cannot. A new value of a thing replaces its old
    value; a value of another thing is another fact, and a model's UPDATE or DELETE of one by
    the other is refused: "Alice paid 80 dollars for the museum tickets" is no new price of "…
    120 dollars for the concert tickets", nor "The budget meeting is at 4pm" a new time of "The
    review meeting is at 3pm".

    Only where both facts hold numbers (a price, a score, a date, a time) and they differ; then
    each side naming a word the other lacks in what the number is of, when both say one verb,
    as the offline rules read it (fact_decisions ``_thing``); not in the subject, which a
    correction may word otherwise.
    Another day or time of one thing is a new value of it ("on Monday at 3pm" / "on Tuesday at
    4pm"), and so is another place for a verb that holds one ("lives in Paris since 2019" / "in
    Berlin since 2023"). Facts that hold no number ("Alice is a teacher" / "Alice is a nurse")
    are left to the model; so are two the rules cannot split, unless each says a word the other
    lacks ("got 85 percent on the biology test" / "… 70 percent on the chemistry test")."""
    first, second = split_statement(new), split_statement(stored)
    a, b = _said(new), _said(stored)
    if first is None or second is None:
        if first is not None or second is not None:
            return None  # one split, one not: their words are not comparable
        if not a.numbers or not b.numbers or a.numbers == b.numbers:
            return None
        said, known = content_words(a.common), content_words(b.common)
        if apart(said, known):
            return _what(said - known, known - said)
        return None
    if not first.value_numbers or not second.value_numbers:
        return None
    if first.value_numbers == second.value_numbers:
        return None
    # Not the subjects' words: a correction rewords its subject as often as not ("The overall
    # budget is now $65,000" for "The total budget for the festival was raised to $70,000", a
    # mobile number for a phone number), and refused, the stale value would stay valid beside
    # it. Another person's is another_owner's; numbers before the verb are numbered_apart's.
    if first.relation == second.relation and apart(first.thing, second.thing):
        return _what(first.thing - second.thing, second.thing - first.thing)
    return None


def _what(said: frozenset[str], known: frozenset[str]) -> str:
    return f"its value is of {', '.join(sorted(said))}, the stored fact's of {', '.join(sorted(known))}"


def merge_loses(new: str, stored: str, merged: str) -> str | None:
    """Why a model's merged text for an UPDATE of ``stored`` by ``new`` may not be stored: it
    lacks a number, code or name of the new fact ("555-1234" merged for "555-9999", "Bob lives
    in Berlin" for "Alice lives in Berlin"), or holds one that neither fact says ("an intern" for
    "CTO" is caught by the name "CTO" it lacks). The new fact's own text is stored instead: a
    merge may word the two facts as one, never change what was said."""
    a, b, m = _said(new), _said(stored), _said(merged)
    lost = (values(new) - values(merged)) | (a.numbers - m.numbers) | (a.names - m.names - m.common)
    if lost:
        return f"its merged text lacks {', '.join(sorted(lost))}"
    said = a.names | a.common | b.names | b.common
    added = (values(merged) - values(new) - values(stored)) | (m.numbers - a.numbers - b.numbers)
    added |= m.names - said
    if added:
        return f"its merged text adds {', '.join(sorted(added))}, which neither fact says"
    return None
