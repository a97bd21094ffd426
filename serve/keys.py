"""Where API keys live, behind one protocol: in the memory store (the default: every replica of
``mnemos serve`` sees the same keys, and a revocation stops a key everywhere at its next
request) or, as an explicit option, in one JSON file (``--keys-file``).

A key reads ``mk_<key_id>_<secret>`` (memory.api_keys); only sha256(secret) is kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from pydantic import TypeAdapter

from memory.api_keys import ApiKey, matches, new_key, split_token
from memory.errors import NotFoundError
from memory.store.base import MemoryStore

__all__ = [
    "ApiKey",
    "ApiKeyStore",
    "JsonFileKeyStore",
    "StoreKeyStore",
    "split_token",
]


class ApiKeyStore(Protocol):
    """Where keys live. Every method is safe to call from request handlers."""

    async def create(
        self,
        agent_ids: Sequence[str],
        *,
        read_only: bool = False,
        name: str = "",
        can_erase: bool = False,
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


class StoreKeyStore:
    """Keys in the memory store (SQLite table or MongoDB collection ``api_keys``). Each request
    reads its key by id, uncached, so a key revoked by ``mnemos keys revoke`` or another replica
    stops working at once."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    async def create(
        self,
        agent_ids: Sequence[str],
        *,
        read_only: bool = False,
        name: str = "",
        can_erase: bool = False,
    ) -> tuple[ApiKey, str]:
        key, token = new_key(
            agent_ids, read_only=read_only, name=name, now=datetime.now(UTC), can_erase=can_erase
        )
        return await self.store.create_api_key(key), token

    async def list(self) -> list[ApiKey]:
        return await self.store.list_api_keys()

    async def revoke(self, key_id: str) -> ApiKey:
        return await self.store.revoke_api_key(key_id, at=datetime.now(UTC))

    async def verify(self, token: str) -> ApiKey | None:
        parts = split_token(token)
        if parts is None:
            return None
        key = await self.store.get_api_key(parts[0])
        return key if key is not None and matches(key, parts[1]) else None


_FILE = TypeAdapter(list[ApiKey])


class JsonFileKeyStore:
    """The explicit alternative (``--keys-file``): keys in one JSON file, for a single server that
    should not keep keys in the memory store. Rewritten atomically: a temp file in
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
        self,
        agent_ids: Sequence[str],
        *,
        read_only: bool = False,
        name: str = "",
        can_erase: bool = False,
    ) -> tuple[ApiKey, str]:
        key, token = new_key(
            agent_ids, read_only=read_only, name=name, now=datetime.now(UTC), can_erase=can_erase
        )
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
