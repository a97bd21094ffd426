"""API keys in the store, planned: a key id is taken once, and a revocation keeps its first date."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.api_keys import ApiKey
from memory.errors import ConflictError, NotFoundError
from memory.store.rules.writes import Plan, PutApiKey, Request


@dataclass(frozen=True)
class ApiKeyRequest(Request[ApiKey | None]):
    """The stored key with this id, or None."""

    key_id: str


def plan_create_api_key(key: ApiKey, current: ApiKey | None) -> Plan[ApiKey]:
    """Store a new key. ConflictError when its id is taken (ids are random: a clash is a bug or
    a replayed request, never something to overwrite)."""
    if current is not None:
        raise ConflictError(f"API key id {key.key_id!r} is taken")
    return Plan((PutApiKey(key, new=True),), key)


def plan_revoke_api_key(key_id: str, *, at: datetime, current: ApiKey | None) -> Plan[ApiKey]:
    """The key stops verifying from ``at``. NotFoundError for an unknown id; revoking again
    changes nothing (the first date stays)."""
    if current is None:
        raise NotFoundError(f"no API key {key_id!r}")
    if current.revoked_at is not None:
        return Plan((), current)
    revoked = current.model_copy(update={"revoked_at": at})
    return Plan((PutApiKey(revoked),), revoked)
