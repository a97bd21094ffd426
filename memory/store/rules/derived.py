"""Fields derived from a fact or a message the same way by every backend: the scope key a write
bumps, the user of a fact's duplicate key, a message's weighted tokens, whether a guest said it
(and, in text, the words text scoring counts)."""

from __future__ import annotations

import math

from memory.errors import InvalidInputError
from memory.models import Fact, MessageIn, ScopeKey, StoredMessage


def fact_scope_key(fact: Fact) -> str:
    """The scope key whose version a write to this fact bumps (context caches watch it)."""
    try:
        if fact.scope == "user":
            return ScopeKey(scope="user", agent_id=fact.agent_id, user_id=fact.user_id).key
        return ScopeKey(scope="agent", agent_id=fact.agent_id).key
    except ValueError as exc:
        raise InvalidInputError(f"invalid fact scope: {exc}") from exc


def dedup_user(scope: str, user_id: str | None) -> str:
    """The user part of a fact's exact-duplicate key (one valid fact per agent, user, scope and
    normalised content): agent-scoped facts are shared by every user, so a user id on one of them
    must not split its duplicates. (PostgreSQL's fact_counts.user_key is the same in SQL.)"""
    return (user_id or "") if scope == "user" else ""


def weighted_tokens(message: MessageIn, weights: dict[str, float], chars_per_token: float) -> float:
    """weight(role) * ceil(len / chars_per_token); roles without a weight take the 'other' one."""
    weight = weights.get(message.role, weights.get("other", 1.0))
    return weight * math.ceil(len(message.content) / chars_per_token)


def said_by_guest(message: MessageIn | StoredMessage) -> bool:
    """A guest's message: role "user" without a user id (a visitor of a public chat). Nobody's
    user memory, but somebody reading the agent's answers: the session has guests
    (SessionInfo.has_guests), a group chat once it has a user too. The marking every setup does
    for sessions recorded without the flag (sql.sessions.GUEST_MESSAGE_SQL, mongo.sessions
    GUEST_MESSAGE) writes this test in their query languages."""
    return message.role == "user" and message.user_id is None
