"""Fields derived from a fact or a message the same way by every backend: the scope key a write
bumps, the words text scoring counts, a message's weighted tokens."""

from __future__ import annotations

import math
import re
import unicodedata

from memory.errors import InvalidInputError
from memory.models import Fact, MessageIn, ScopeKey

_WORD = re.compile(r"\w+")


def fact_scope_key(fact: Fact) -> str:
    """The scope key whose version a write to this fact bumps (context caches watch it)."""
    try:
        if fact.scope == "user":
            return ScopeKey(scope="user", agent_id=fact.agent_id, user_id=fact.user_id).key
        return ScopeKey(scope="agent", agent_id=fact.agent_id).key
    except ValueError as exc:
        raise InvalidInputError(f"invalid fact scope: {exc}") from exc


def tokenize(text: str) -> list[str]:
    """Words, case- and diacritic-folded: what $text (language "none") and FTS5's unicode61
    tokenizer match on."""
    decomposed = unicodedata.normalize("NFKD", text)
    folded = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return _WORD.findall(folded)


def token_count(text: str) -> int:
    """A fact's length for BM25 (stored beside the fact where the backend scores text itself)."""
    return len(tokenize(text))


def weighted_tokens(message: MessageIn, weights: dict[str, float], chars_per_token: float) -> float:
    """weight(role) * ceil(len / chars_per_token); roles without a weight take the 'other' one."""
    weight = weights.get(message.role, weights.get("other", 1.0))
    return weight * math.ceil(len(message.content) / chars_per_token)
