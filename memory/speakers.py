"""Who said a message and who takes part in a session: one reading for the group rule, the
prompts, the scope rules and the offline provider.

A message may carry a user id with any role. Role "user" is a user speaking; role "other" with a
user id is a person the backend knows speaking in another capacity (an operator, a second human
in the room): they said it, as a user does, and their words are theirs. A user id on any other
role (an agent's answer to that user, a tool's result for them) names a person the session holds
data of: a participant, counted by the group rule (memory/scopes.py), though they did not say it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from memory.model_types import Role

# The roles a person speaks in.
PERSON_ROLES: frozenset[Role] = frozenset({"user", "other"})


class _Said(Protocol):
    @property
    def role(self) -> Role: ...

    @property
    def user_id(self) -> str | None: ...


def said_by(message: _Said) -> str | None:
    """The user who said the message: its user id when a person said it, else None (a guest,
    an agent, a tool, the system)."""
    return message.user_id if message.role in PERSON_ROLES else None


def by_person(message: _Said) -> bool:
    """Whether a person said the message: a user (a guest too, without an id), or a known
    person in another role (``said_by``)."""
    return message.role == "user" or said_by(message) is not None


def participants(messages: Iterable[_Said]) -> tuple[str, ...]:
    """Every user the messages carry the id of, in order, once each: the session's participants
    (who said them, or whom they were said to or for), whom the group rule counts."""
    return tuple(dict.fromkeys(m.user_id for m in messages if m.user_id))
