"""Which users of a formation window a text names: by the name their messages carry, their id,
the name the id spells ("alice_smith") or the name they give themselves ("Hi, I'm Alice Smith"),
the last two only where the text writes them as a name ("Mark Price", not "the price"). What
memory/scopes.py reads to keep an item that names a user out of agent memory."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory.models import StoredMessage
from memory.speakers import said_by

# What a person does, after the one it is said of ("The user is…", "Mark moved…").
PERSON_VERB = (
    r"(?:is|was|are|were|has|had|will|would|can|does|did|isn['\u2019]t|doesn['\u2019]t"
    r"|works|worked|lives|lived|plans|planned|likes|loves|hates|prefers|wants|needs|owns"
    r"|studies|studied|moved|moves|travels|traveled|travelled|visited|visits|plays|enjoys"
    r"|speaks|drives|attends|joined|founded|became|bought|recently|just|currently|also)"
)

# After a name opening a sentence, what makes it a person's: "Mark's", "Mark is…", a surname
# ("Alice Smith is…").
_A_SUBJECTS_NEXT = re.compile(rf"['\u2019]s\b|\s+{PERSON_VERB}\b|\s+[A-Z][a-z]+\b")


def users_named(text: str, messages: Sequence[StoredMessage]) -> frozenset[str]:
    """The window's users (their ids) that ``text`` names: by the name their messages carry or
    by their user id, as whole words in any case ("Alice's new job" names the user alice, and
    the user "Alice Smith" too: a part of a name names its person; a name that is also a word,
    "Will", claims the sentences using it: for agent memory, the safe side). And by a name the
    rules read, the one the id spells ("alice_smith", "AliceSmith": ``_id_names``) or the one
    they give themselves in the window ("Hi, I'm Alice Smith": ``_said_names``), only where
    ``text`` writes it as a name (``_written_as_name``): an id ``mark_price`` is no claim on
    "The price of the Pro plan"."""
    given: dict[str, set[str]] = {}
    read: dict[str, set[str]] = {}
    for m in messages:
        if (user := said_by(m)) is not None:
            given.setdefault(user, {user}).update(_names_of(m.name))
            inferred = read.setdefault(user, set())
            inferred.update(name for name in (_id_names(user),) if name is not None)
            inferred.update(_said_names(m.content))
    return frozenset(
        user
        for user, names in given.items()
        if any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text, re.IGNORECASE) for n in names)
        or any(_written_as_name(n, text) for n in read[user])
    )


# Where a sentence opens, and a capitalised word may be any word: the text's start, or after a
# sentence's end, a colon or a bullet; not after a title ("Ms. Smith").
_SENTENCE_OPENS = re.compile(
    r"(?:^|[!?:;]|(?<!\bMr)(?<!\bMs)(?<!\bMrs)(?<!\bDr)(?<!\bProf)(?<!\bSt)\.)[\s\"'(*-]*$"
)


def _written_as_name(name: str, text: str) -> bool:
    """Whether ``text`` writes ``name``, one the rules read from an id or an introduction, as
    a name: the whole of a name of several words in its capitals ("Mark Price"), a part of it
    capitalised inside a sentence ("Ms. Price", "ask Mark"), or its first part opening one as
    a person's subject ("Mark is…", "Mark's…", "Mark Twain…"). The capitals are the evidence:
    not "the price", "Mark the invoice as paid", "Price is per seat"."""
    parts = name.split()
    if len(parts) > 1 and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text):
        return True
    for first, part in ((i == 0, p) for i, p in enumerate(parts) if len(p) > 2):
        for found in re.finditer(rf"(?<!\w){re.escape(part)}(?!\w)", text):
            if not _SENTENCE_OPENS.search(text, 0, found.start()):
                return True
            if first and _A_SUBJECTS_NEXT.match(text, found.end()):
                return True
    return False


def _names_of(name: str | None) -> list[str]:
    """A person's name and each of its parts a model may call them by: "Alice Smith" is named by
    "Alice" (models write first names) and by "Smith" ("Ms. Smith"); not by an initial."""
    if not name:
        return []
    return [name, *(part for part in name.split() if len(part) > 2 and part[:1].isupper())]


# The words of an id that are no name: "user_alice" spells Alice, "support-team" nobody.
_NOT_A_NAME = frozenset((
    "user", "users", "customer", "client", "guest", "visitor", "member", "person", "caller",
    "speaker", "agent", "admin", "account", "test", "demo", "anon", "anonymous", "bot", "team",
    "support", "staff", "sales", "service", "system", "api", "web", "app", "mobile", "ops", "dev",
    "prod", "default", "unknown", "temp", "tmp", "id", "buyer", "seller", "owner", "manager",
    "lead", "desk", "help", "info", "contact", "billing", "inc", "corp", "ltd", "llc", "shop",
    "store", "office", "group", "labs",
))  # fmt: skip


def _id_names(user_id: str) -> str | None:
    """The name a user id spells, when it is made of names only: "alice_smith", "alice.smith",
    "alice-smith" and "AliceSmith" spell "Alice Smith"; an opaque id ("u-8f3a21", "user_42")
    spells none, nor an id of one word (the id itself names its user)."""
    if not re.fullmatch(r"[A-Za-z]+(?:[._-][A-Za-z]+)*", user_id):
        return None
    parts = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", user_id)
    if len(parts) < 2 or parts[-1].lower() in _NOT_A_NAME:
        # One word is the id itself; a role last ("acme_buyer", "guest-user") is something's
        # role, and the words before it name what it serves, not a person.
        return None
    names = [p.capitalize() for p in parts if p.lower() not in _NOT_A_NAME]
    return " ".join(names) or None


# A name as people write theirs: capitalised words ("Alice Smith", "Anne-Marie", "O'Brien").
_NAME_WORD = r"(?:[A-Z]['\u2019])?[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_NAME = rf"({_NAME_WORD}(?:\s+{_NAME_WORD}){{0,2}})\b(?![-'\u2019]?\w)"
# A greeting, and whom it greets ("Hey there,", "Hi everyone!", "Thanks!").
_GREETING = (
    r"(?i:\b(?:hi|hello|hey|hiya|greetings|good\s+(?:morning|afternoon|evening)|thanks"
    r"|thank\s+you)(?:\s+(?:there|everyone|all|folks|team|guys|again))?)\s*[,.!]*\s*"
)
# Where a message opens, or after a greeting: what is said there introduces its speaker ("Hi,
# I'm Alice Smith, CTO of…", "Call me Dana"), not mid-talk ("Can you call me Monday?").
_GREETED = rf"(?:^\W*|{_GREETING})"
# Where a sentence opens, too: "I'm …" introduces the speaker there ("Thanks. I'm Alice Smith"),
# not mid-sentence ("so I'm French").
_OPENING = rf"(?:{_GREETED}|(?<=[.!?])\s+)"


# How a speaker gives her name: "my name is …" anywhere; "call me …" and "<name> here" where the
# message opens or after a greeting; "I'm …" and "I am …" opening a sentence; "this is …" after a
# greeting with nothing after the name but the sentence's end, or opening a sentence with
# "from", "here" or "speaking" after it ("This is Dana from Acme", not "This is Python code",
# nor "This is Premium."). Index 0 is "my name is", which needs no capitals (below).
def _said_name_patterns(name: str) -> tuple[re.Pattern[str], ...]:
    return (
        re.compile(rf"(?i:\bmy\s+name\s+is|\bmy\s+name['\u2019]s)\s+{name}"),
        re.compile(rf"{_GREETED}(?i:(?:please\s+|just\s+|you\s+can\s+)?call\s+me)\s+{name}"),
        re.compile(rf"{_OPENING}(?i:I['\u2019]m|I\s+am)\s+{name}"),
        re.compile(rf"{_GREETING}(?i:this\s+is)\s+{name}(?=\s*(?:[,.!?;]|$))"),
        re.compile(rf"{_OPENING}(?i:this\s+is)\s+{name}(?=\s+(?:from|here|speaking)\b)"),
        re.compile(rf"{_GREETED}{name}(?=\s+(?i:here)\s*(?:[,.!;]|$))"),
    )


_SAID_NAME = _said_name_patterns(_NAME)
# A name written in lower case, as many type in chat ("hi i'm alice smith", "my name is dana
# lee"): read where the capitals say nothing, a message without any, and after "my name is",
# which says it whatever the case. Its words up to the first that is no name's ("alice and i
# work…" is Alice), capitalised as a model writes them: the text's capitals stay the evidence
# (``_written_as_name``), so a word taken for a name ("i'm tired") claims no ordinary text.
_LOWER_WORD = r"[a-z]+(?:['\u2019-][a-z]+)?"
_LOWER_SAID_NAME = _said_name_patterns(
    rf"({_LOWER_WORD}(?:\s+{_LOWER_WORD}){{0,2}})\b(?![-'\u2019]?\w)"
)
_NO_NAME_WORDS = frozenset((
    "and", "or", "but", "so", "i", "im", "i'm", "from", "here", "at", "of", "the", "a", "an",
    "with", "in", "on", "to", "for", "by", "is", "am", "was", "my", "me", "we", "you", "btw", "speaking", "again", "too", "please", "thanks", "ok", "okay", "lol",
))  # fmt: skip


def _lower_name(words: str) -> str | None:
    kept: list[str] = []
    for word in words.split():
        if word in _NO_NAME_WORDS:
            break
        kept.append(re.sub(r"(^|['\u2019-])([a-z])", lambda m: m[1] + m[2].upper(), word))
    return " ".join(kept) or None


# Capitalised words said after "I'm" that are no name: peoples, faiths, languages.
_NOT_A_SAID_NAME = frozenset((
    "american", "british", "english", "french", "german", "spanish", "italian", "canadian",
    "australian", "irish", "scottish", "welsh", "dutch", "chinese", "japanese", "korean", "indian",
    "mexican", "brazilian", "russian", "polish", "portuguese", "swedish", "norwegian", "danish",
    "finnish", "greek", "turkish", "african", "european", "asian", "latino", "latina", "jewish",
    "muslim", "christian", "catholic", "protestant", "hindu", "buddhist", "sikh", "mormon",
    "sorry", "fine", "good", "great", "okay", "ok", "here", "back", "done", "ready", "sure",
    "happy", "glad", "new", "not", "just", "so", "very", "really", "also", "still", "currently",
    "looking", "trying", "going", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "tomorrow", "today", "later", "support", "sales", "billing", "team",
    "everyone", "someone", "nobody", "all", "same",
))  # fmt: skip


def _said_names(content: str) -> list[str]:
    """The names a speaker gives herself in a message ("Hi, I'm Alice Smith", "my name is Dana
    Lee", "This is Bo from Acme"): her name for the rules of ``users_named``."""
    found = [name for pattern in _SAID_NAME for name in pattern.findall(content)]
    lower = _LOWER_SAID_NAME if content == content.lower() else _LOWER_SAID_NAME[:1]
    found += [
        name
        for pattern in lower
        for words in pattern.findall(content)
        if (name := _lower_name(words)) is not None
    ]
    return [name for name in found if name.split()[0].lower() not in _NOT_A_SAID_NAME]
