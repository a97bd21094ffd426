"""Which memory scopes exist for an agent, a session and a user: the one place of seed 002's rules.

- Toggles: an agent may switch its agent memory and its user memory off.
- Group chats: with more than one user in a session, user memory is off (it would leak one user's
  memory to the others), for forming and for reading alike.
- Session memory (reflections only) is always on.
- User memory belongs to the user who said it: an item about a speaker without a user id, or about
  another user than the window's single one, is never anyone's user memory. Personal content that
  cannot be user memory is never promoted to agent memory: a fact is dropped, a reflection stays
  in this session's memory, unless it tells a private detail in a window of no group (below).
- Agent memory is what any user of the agent may read, so an item the model put there that names
  a user of the window ("Alice is the CTO of Acme Robotics") is that user's, whatever the model
  said: placed as theirs by the rule above; and one that names a person's private detail
  ("Dana was diagnosed with asthma", memory/privacy.py) is its speaker's. A model's scope is a
  classification, not a permission. A user is named by the name their messages carry, their
  id, the name the id spells ("alice_smith") or the name they give themselves ("I'm Alice"),
  these two where the text writes them as a name ("Mark Price", not "the price"):
  memory/names.py.
  A model's merged text for an agent fact is held to the same rules (``personal_merge``,
  memory/pipeline/dedup.py): a merge that would write a person's detail there is refused, the
  model's UPDATE kept in the new fact's own words.
- Session memory is read by whoever is in the session, including people who join it later: a
  private detail the model put there, told where one user was alone, is that user's; one that
  can be no one's user memory there (a guest's, or any while the agent's user memory is off) is
  dropped. In a group chat session memory is what everyone present heard: kept there.

``formable_scopes`` is what a formation window may write, and ``place_fact``/``place_reflection``
where one extracted item goes (the models and the heuristic classify into every scope; this
decides what is kept); ``visible_scopes`` is what one agent turn
may read (the context and search_facts alike), bound to the asking user; ``dedup_filter`` is which
stored facts a new fact is compared with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memory.models import (
    AgentConfig,
    FactFilter,
    FactScope,
    ScopeKey,
    SessionInfo,
    StoredMessage,
)
from memory.names import PERSON_VERB, users_named
from memory.privacy import private_detail
from memory.settings import Scope
from memory.speakers import by_person, said_by


def single_user(session: SessionInfo) -> str | None:
    """The session's only user; None in a group chat (more than one user in the session, an
    agent's own view or not) or a session without users."""
    return session.user_ids[0] if len(session.user_ids) == 1 and not session.is_group else None


def _toggled(agent: AgentConfig, *, user_ok: bool) -> tuple[FactScope, ...]:
    scopes: list[FactScope] = []
    if agent.agent_memory_enabled:
        scopes.append("agent")
    if agent.user_memory_enabled and user_ok:
        scopes.append("user")
    return tuple(scopes)


def formable_scopes(
    agent: AgentConfig, session: SessionInfo
) -> tuple[tuple[FactScope, ...], tuple[Scope, ...]]:
    """(fact scopes, reflection scopes) a window of this session may write."""
    facts = _toggled(agent, user_ok=single_user(session) is not None)
    reflections: tuple[Scope, ...] = (*facts, "session")
    return facts, reflections


def sole_speaker(messages: Sequence[StoredMessage], window_user: str | None) -> str | None:
    """The user every user message of the window came from (and every message of role "other"
    carrying a user id: memory/speakers.py), when that is the window's user and no user message
    is anonymous: then an item whose speaker the model left out can only be theirs."""
    users = {said_by(m) for m in messages if by_person(m)}
    return window_user if window_user is not None and users == {window_user} else None


# An item about its unnamed speaker: in the words models write for the person who said it ("The
# user is…", "The customer's budget…", "She works…", "I am the CTO…", copied from the message),
# or with no subject before a verb only a person does ("Works as CTO…", "Plans to move…"). As
# personal as one naming them. Only as the subject, at the start: "Always confirm dates with the
# user" and "The user tickets queue opens at 8:00" are the agent's work, "Has a 30-day refund
# policy" may be a business's.
_PERSON = r"(?:user|customer|client|person|caller|speaker)"
_ABOUT_THE_SPEAKER = re.compile(
    rf"^\W*(?:(?:the|this|that)\s+)?{_PERSON}(?:['\u2019]s\s|\s+{PERSON_VERB}\b)"
    r"|^\W*(?:I|I['\u2019]m|I['\u2019]ve|my|me|he|she|they|his|her|their|he['\u2019]s|she['\u2019]s"
    r"|they['\u2019]re)\b",
    re.IGNORECASE,
)
# What a subjectless "is" or "was" says only of a person: models leave out the subject of the
# person who said it ("Is the CTO of…", "Was a nurse", "Is in therapy…", "Is 34 years old"). A
# positive list: anything else a business says of itself so ("Is open on Sundays", "Was acquired
# by Google", "Is a 24/7 service", "Is the only clinic with…") stays the agent's. "Has" stays out
# ("Has a 30-day refund policy"): what a person has that is private, privacy.py reads ("Has two
# kids", "Has diabetes"), like what they earn or where they were born.
_ROLE = (
    r"(?:cto|ceo|cfo|coo|cio|cmo|founder|co-?founder|engineer|developer|programmer|designer"
    r"|nurse|doctor|physician|surgeon|dentist|pharmacist|teacher|professor|lecturer|tutor"
    r"|student|researcher|scientist|manager|director|lawyer|attorney|accountant|consultant"
    r"|architect|analyst|chef|cook|waiter|waitress|pilot|therapist|psychologist|journalist"
    r"|writer|artist|musician|photographer|mechanic|electrician|plumber|carpenter|farmer"
    r"|firefighter|soldier|veteran|intern|freelancer|retiree|pensioner|mother|father|mom|dad"
    r"|parent|widow|widower|vegetarian|vegan)s?"
)
# A role noun is a person's when nothing it qualifies follows: "a nurse in Lisbon", not "a
# nurse staffing agency".
_ROLE_ENDS = r"(?=\s*(?:[,.;:!?)]|$)|\s+(?:at|in|for|with|from|of|and|who|since|until|by|on)\b)"
_A_PERSON_IS = (
    rf"(?:an?\s+(?:[\w-]+\s+){{0,2}}{_ROLE}{_ROLE_ENDS}"
    r"|the\s+(?:new\s+|current\s+|former\s+)?(?:cto|ceo|cfo|coo|cio|cmo|founder|co-?founder"
    r"|owner)\s+(?:of|at)"
    r"|\d{1,3}\s+(?:years?|yrs?)\s+old|married|pregnant|divorced|engaged\s+to|widowed"
    r"|unemployed|self-employed|in\s+(?:therapy|rehab))"
)
_NO_SUBJECT = re.compile(
    r"^\W*(?:(?:currently|still|now|also|recently)\s+)?(?:works|worked|lives|lived|plans\s+to"
    r"|planned\s+to|likes|loves|hates|prefers|wants|needs|owns|studies|studied|moved|travels"
    r"|traveled|travelled|visited|enjoys|speaks|drives|attends|joined|became|bought|planning"
    r"|working\s+(?:as|at|for)|living\s+in|moving\s+to"
    r"|used\s+to\s+(?:work|live|study)"
    rf"|(?:(?:is|was|am)\s+(?:(?:currently|still|now|also)\s+)?|used\s+to\s+be\s+){_A_PERSON_IS})"
    r"\b",
    re.IGNORECASE,
)
# A text opening with "is", "was" or "has" left out its subject, and so does each clause joined
# to it ("Is based in Berlin and works at Acme as a nurse": "works at…" is its subject's too).
_SUBJECTLESS = re.compile(r"^\W*(?:is|was|am|has|had)\b", re.IGNORECASE)
# Where a merged text joins what two facts say: a comma or semicolon, a conjunction or a relative
# word ("The clinic opens at 9, where the user gets…"), each one opening a clause.
_JOINED = re.compile(
    r"\s*[,;]\s*(?:(?:and|but|while|whereas|where|who|whose|which|because|since|so)\s+)?"
    r"|\s+(?:and|but|while|whereas|where|who|whose|which|because|since)\s+",
    re.IGNORECASE,
)


def about_the_speaker(text: str) -> bool:
    """Whether ``text`` is about the person who said it, unnamed: "The user is the CTO…",
    "User's budget…", "Works as CTO…", "Is the CTO…", "Is based in Berlin and works as…"."""
    if _ABOUT_THE_SPEAKER.search(text) or _NO_SUBJECT.match(text):
        return True
    first, *joined = _JOINED.split(text)
    return bool(_SUBJECTLESS.match(first)) and any(_NO_SUBJECT.match(c) for c in joined)


def personal(text: str) -> bool:
    """Whether ``text`` is what agent memory never holds, whoever it names: a person's private
    detail (memory/privacy.py) or a statement about its unnamed speaker."""
    return private_detail(text) is not None or about_the_speaker(text)


def personal_merge(text: str) -> bool:
    """Whether a model's merged text is ``personal``, read as the items it joins: "The clinic
    opens at 9 am, where the user gets…" tells of its speaker as "The user gets…" does. A joined
    clause without a subject continues the first one's ("…, and is open on Sundays"): there only
    a person as the subject counts."""
    _, *joined = _JOINED.split(text)
    return personal(text) or any(_ABOUT_THE_SPEAKER.search(clause) for clause in joined)


def as_owned[S: Scope](
    scope: S, speaker: str | None, text: str, messages: Sequence[StoredMessage]
) -> tuple[S | Literal["user"], str | None]:
    """(scope, speaker) of an extracted item as the rules read it. One the model put in agent
    memory is personal content when it names a user of the window (that user's; naming several,
    nobody's, so it is never kept as user memory), a person's private detail (its speaker's:
    what a user tells of somebody else's health or family is theirs to be reminded of, not every
    user's to read) or a statement about its unnamed speaker ("The user is the CTO of…", "Works
    as…": ``about_the_speaker``; its speaker's, dropped in a group chat). One the model put in
    session memory that tells a private detail is its speaker's too: whoever joins the session
    later reads its memory, and a detail told in a conversation of one user is not theirs to
    read (a group's stays in the session, since each of its people heard it; one that can be no
    one's is dropped: ``place_reflection``). Anything else stays as classified."""
    if scope == "session" and private_detail(text) is not None:
        return "user", speaker
    if scope != "agent":
        return scope, speaker
    if named := users_named(text, messages):
        return "user", next(iter(named)) if len(named) == 1 else None
    if personal(text):
        return "user", speaker
    return scope, speaker


def place_fact(
    scope: FactScope, speaker: str | None, window_user: str | None, allowed: tuple[FactScope, ...]
) -> FactScope | None:
    """The scope an extracted fact is stored in, or None (dropped): never another than its own."""
    if scope not in allowed:
        return None
    if scope == "user" and (speaker is None or speaker != window_user):
        return None
    return scope


def place_reflection(
    scope: Scope,
    speaker: str | None,
    window_user: str | None,
    allowed: tuple[Scope, ...],
    *,
    text: str = "",
    group: bool | None = None,
) -> Scope | None:
    """The scope an extracted reflection is stored in, or None (dropped). A user reflection that
    cannot be this user's stays in the session, where only this conversation sees it; but not
    one telling a private detail in a window of no group (``group`` False: a guest alone, or a
    user whose agent keeps no user memory): whoever joins later did not hear it, and reads the
    session's memory. A group's stays: each of its people heard it. ``group`` None (a window of
    an older run) keeps it in the session, as those runs did."""
    if scope == "user":
        if "user" in allowed and speaker is not None and speaker == window_user:
            return "user"
        if group is False and private_detail(text) is not None:
            return None
        return "session"
    return scope if scope in allowed else None


@dataclass(frozen=True)
class VisibleScopes:
    """What one agent turn may read: fact scopes and the reflection/blob keys, in context order."""

    fact_filter: FactFilter | None  # None: no fact scope is on
    keys: tuple[ScopeKey, ...]


def visible_scopes(
    agent: AgentConfig, session: SessionInfo | None, user_id: str | None
) -> VisibleScopes:
    """The toggles and the group-chat rule, bound to this user.

    User memory needs a user: ``user_id`` must be given and, in a session, be the session's only
    user (a second user makes it a group chat, though they spoke to another agent of the
    session, and a user not in the session reads nothing of theirs there). Without a session (a
    search outside any conversation) only the toggles count.
    """
    if session is None:
        fact_scopes = _toggled(agent, user_ok=user_id is not None)
        scopes: tuple[Scope, ...] = fact_scopes
    else:
        user_ok = user_id is not None and single_user(session) == user_id
        fact_scopes = _toggled(agent, user_ok=user_ok)
        scopes = (*fact_scopes, "session")

    fact_filter = None
    if fact_scopes:
        fact_filter = FactFilter(
            agent_id=agent.agent_id,
            include_agent_scope="agent" in fact_scopes,
            user_id=user_id if "user" in fact_scopes else None,
        )
    session_id = session.session_id if session is not None else None
    keys = tuple(
        ScopeKey.of(scope, agent.agent_id, user_id=user_id, session_id=session_id)
        for scope in scopes
    )
    return VisibleScopes(fact_filter=fact_filter, keys=keys)


def may_change(new_scope: FactScope, stored_scope: FactScope) -> bool:
    """Whether a decision may UPDATE or DELETE a stored fact of ``stored_scope`` for a new fact
    of ``new_scope``. A user's fact meets the agent's facts among its candidates
    (``dedup_filter``), but it changes only what is the user's: an UPDATE would write its words
    into the memory every user of the agent reads (the stored fact keeps its scope), a DELETE
    would take a fact from every user for what one of them said of themselves."""
    return not (new_scope == "user" and stored_scope == "agent")


def dedup_filter(
    agent_id: str, fact_scopes: tuple[FactScope, ...], user_id: str | None
) -> FactFilter:
    """Dedup candidates of a new fact: every fact the speaker can see, whichever scope the model
    put the new fact in: the agent's facts where agent memory is on and, where the window may
    write user facts, this user's (a model that files one session's statement under "user" and
    the next one's under "agent" must still meet the first). Never another user's facts, nor
    the agent's while its memory is off: a statement found "already known" there would be kept
    nowhere its speaker can read it."""
    return FactFilter(
        agent_id=agent_id,
        include_agent_scope="agent" in fact_scopes,
        user_id=user_id if "user" in fact_scopes else None,
    )
