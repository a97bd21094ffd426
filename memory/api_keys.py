"""API keys as the store keeps them: each bound to a set of agent ids, optionally read-only,
never the secret itself (only its sha256).

A key reads ``mk_<key_id>_<secret>``: ``key_id`` finds the record without scanning, and the
comparison of the secret's hash is constant-time. Minting and checking live here so that every
place keys are kept (the store, a keys file) agrees on them.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from memory.errors import InvalidInputError
from memory.models import Id, UtcDatetime

PREFIX = "mk"
_IDS = TypeAdapter(list[Id])


class ApiKey(BaseModel):
    """A key as stored: never the secret itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: str
    name: str = ""
    agent_ids: tuple[str, ...] = Field(min_length=1)
    read_only: bool = False
    # Erasing a user (all their memory, hard-deleted) is its own permission: a write key is not
    # enough (issue 23). Keys stored before it existed read as False.
    can_erase: bool = False
    secret_sha256: str
    created_at: UtcDatetime
    revoked_at: UtcDatetime | None = None

    def allows(self, agent_id: str, *, write: bool) -> bool:
        return agent_id in self.agent_ids and not (write and self.read_only)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(
    agent_ids: Sequence[str],
    *,
    read_only: bool,
    name: str,
    now: datetime,
    can_erase: bool = False,
) -> tuple[ApiKey, str]:
    """A fresh key and its full token (shown once: only the key, which holds the hash, is kept)."""
    try:
        ids = tuple(dict.fromkeys(_IDS.validate_python(list(agent_ids))))
    except ValueError as e:
        raise InvalidInputError(f"agent_ids: not valid ids: {e}") from e
    if not ids:
        raise InvalidInputError("agent_ids: a key needs at least one agent id")
    if can_erase and read_only:
        raise InvalidInputError("a read-only key cannot erase")
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(
        key_id=key_id,
        name=name,
        agent_ids=ids,
        read_only=read_only,
        can_erase=can_erase,
        secret_sha256=digest(secret),
        created_at=now,
    )
    return key, f"{PREFIX}_{key_id}_{secret}"


def split_token(token: str) -> tuple[str, str] | None:
    """(key_id, secret) of a well-formed token. The secret may itself hold underscores."""
    parts = token.strip().split("_", 2)
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def matches(key: ApiKey, secret: str) -> bool:
    return key.revoked_at is None and hmac.compare_digest(key.secret_sha256, digest(secret))
