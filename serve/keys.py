"""API keys: each bound to a set of agent ids, optionally read-only, stored hashed.

A key reads ``mk_<key_id>_<secret>``. Only sha256(secret) is stored, so a leaked key file lets
nobody in; ``key_id`` finds the record without scanning, and the comparison is constant-time.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from memory.errors import InvalidInputError, NotFoundError
from memory.models import Id

PREFIX = "mk"
_IDS = TypeAdapter(list[Id])


class ApiKey(BaseModel):
    """A key as stored: never the secret itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key_id: str
    name: str = ""
    agent_ids: tuple[str, ...] = Field(min_length=1)
    read_only: bool = False
    secret_sha256: str
    created_at: datetime
    revoked_at: datetime | None = None

    def allows(self, agent_id: str, *, write: bool) -> bool:
        return agent_id in self.agent_ids and not (write and self.read_only)


class ApiKeyStore(Protocol):
    """Where keys live. Every method is safe to call from request handlers."""

    async def create(
        self, agent_ids: Sequence[str], *, read_only: bool = False, name: str = ""
    ) -> tuple[ApiKey, str]:
        """A new key; returns it and the full token, which is shown once and never stored."""
        ...

    async def list(self) -> list[ApiKey]: ...

    async def revoke(self, key_id: str) -> ApiKey:
        """NotFoundError for an unknown id; revoking twice keeps the first date."""
        ...

    async def verify(self, token: str) -> ApiKey | None:
        """The live key this token is, or None (malformed, unknown, wrong secret, revoked)."""
        ...


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(
    agent_ids: Sequence[str], *, read_only: bool, name: str, now: datetime
) -> tuple[ApiKey, str]:
    try:
        ids = tuple(dict.fromkeys(_IDS.validate_python(list(agent_ids))))
    except ValueError as e:
        raise InvalidInputError(f"agent_ids: not valid ids: {e}") from e
    if not ids:
        raise InvalidInputError("agent_ids: a key needs at least one agent id")
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(
        key_id=key_id,
        name=name,
        agent_ids=ids,
        read_only=read_only,
        secret_sha256=_digest(secret),
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
    return key.revoked_at is None and hmac.compare_digest(key.secret_sha256, _digest(secret))


_FILE = TypeAdapter(list[ApiKey])


class JsonFileKeyStore:
    """Keys in one JSON file (e.g. ``.data/api_keys.json``), rewritten atomically: a temp file in
    the same directory, then a rename, so a crash never leaves half a file. One process writes it
    at a time (the CLI or one server); readers re-read it when it changed on disk, so a key
    revoked by the CLI stops working on a running server at its next request."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()
        self._cache: tuple[tuple[int, int], dict[str, ApiKey]] | None = None

    def _read(self) -> dict[str, ApiKey]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        mark = (stat.st_mtime_ns, stat.st_size)
        if self._cache is not None and self._cache[0] == mark:
            return self._cache[1]
        keys = {k.key_id: k for k in _FILE.validate_json(self.path.read_bytes())}
        self._cache = (mark, keys)
        return keys

    def _write(self, keys: dict[str, ApiKey]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(
            [k.model_dump(mode="json") for k in keys.values()], indent=2, ensure_ascii=False
        )
        fd, tmp = tempfile.mkstemp(prefix=".api_keys.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._cache = None

    async def create(
        self, agent_ids: Sequence[str], *, read_only: bool = False, name: str = ""
    ) -> tuple[ApiKey, str]:
        key, token = new_key(agent_ids, read_only=read_only, name=name, now=datetime.now(UTC))
        async with self._lock:
            keys = dict(await asyncio.to_thread(self._read))
            keys[key.key_id] = key
            await asyncio.to_thread(self._write, keys)
        return key, token

    async def list(self) -> list[ApiKey]:
        return sorted((await asyncio.to_thread(self._read)).values(), key=lambda k: k.created_at)

    async def revoke(self, key_id: str) -> ApiKey:
        async with self._lock:
            keys = dict(await asyncio.to_thread(self._read))
            key = keys.get(key_id)
            if key is None:
                raise NotFoundError(f"no API key {key_id!r}")
            if key.revoked_at is None:
                key = key.model_copy(update={"revoked_at": datetime.now(UTC)})
                keys[key_id] = key
                await asyncio.to_thread(self._write, keys)
        return key

    async def verify(self, token: str) -> ApiKey | None:
        parts = split_token(token)
        if parts is None:
            return None
        key = (await asyncio.to_thread(self._read)).get(parts[0])
        return key if key is not None and matches(key, parts[1]) else None


def default_keys_path(data_dir: Path) -> Path:
    return data_dir / "api_keys.json"
