"""The reading calls of the store contract whose rules are the same on every backend, written
once: which reflections a listing holds and in what order, what a scope key never written reads
as, which ids are asked for, the embedding meta's cache. Each backend answers one narrower query
per call (the abstract ``_`` methods) in its own database's terms."""

from __future__ import annotations

import abc
from collections.abc import Sequence

from memory.models import Reflection, ScopeKey
from memory.store.base import MemoryStore


class SharedReads(MemoryStore):
    # ------------------------------------------------------------ embedding meta

    _meta: tuple[str, int] | None = None  # read once; changed only by a re-embed switch

    @abc.abstractmethod
    async def _read_embedding_meta(self) -> tuple[str, int] | None:
        """The stored (model, dimension), read from the database."""

    async def embedding_meta(self) -> tuple[str, int] | None:
        if self._meta is None:
            self._meta = await self._read_embedding_meta()
        return self._meta

    # ------------------------------------------------------------ reflections

    @abc.abstractmethod
    async def _reflections(
        self, key: ScopeKey, *, buffered_only: bool, newest_first: bool, limit: int | None
    ) -> list[Reflection]:
        """The key's reflections (the unabsorbed ones only when ``buffered_only``) ordered by
        formed_at, then by insertion (the later stored last), in that direction; at most
        ``limit`` (> 0) of them, all of them for None."""

    async def unabsorbed_reflections(
        self, key: ScopeKey, *, limit: int | None = None, newest_first: bool = False
    ) -> list[Reflection]:
        if limit is not None and limit <= 0:
            return []
        return await self._reflections(
            key, buffered_only=True, newest_first=newest_first, limit=limit
        )

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        if limit <= 0:
            return []
        return await self._reflections(
            key, buffered_only=not include_absorbed, newest_first=True, limit=limit
        )

    # ------------------------------------------------------------ change counters and epochs

    @abc.abstractmethod
    async def _stored_scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        """The stored counters among ``keys`` (distinct, not empty); keys never written absent."""

    async def scope_versions(self, keys: Sequence[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(keys))
        stored = await self._stored_scope_versions(wanted) if wanted else {}
        return {key: stored.get(key, 0) for key in wanted}

    @abc.abstractmethod
    async def _erasure_epochs(self, agent_id: str, user_ids: list[str]) -> dict[str, int]:
        """erasure_epochs for distinct users."""

    async def erasure_epochs(self, agent_id: str, user_ids: Sequence[str]) -> dict[str, int]:
        return await self._erasure_epochs(agent_id, list(dict.fromkeys(user_ids)))
