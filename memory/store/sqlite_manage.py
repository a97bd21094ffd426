"""The management methods of the SQLite backend (operators, backend UIs): list, edit, delete.

A person's edit or delete goes through the same machinery as a formation: one BEGIN IMMEDIATE
transaction that stamps the rows with the agent's bumped fact counter (so every process's vector
cache re-reads them) and bumps the scope key's version (so context caches drop what they hold).
"""

from __future__ import annotations

import abc
import sqlite3
from collections.abc import Callable
from datetime import datetime
from functools import partial

import numpy as np

from memory.errors import (
    ConflictError,
    EmbeddingMismatchError,
    InvalidInputError,
    NotFoundError,
)
from memory.ids import content_hash
from memory.models import Fact, FactFilter, FactRevision, Reflection, ScopeKey
from memory.store.base import MemoryStore, Vector
from memory.store.sqlite_codec import (
    FACT_COLUMNS,
    fact_columns,
    fact_from_row,
    history_to_json,
    reflection_from_row,
    to_blob,
    to_us,
)
from memory.store.sqlite_formation import SAME_FACT_KEY, fact_scope_key, rewrite_fact
from memory.store.sqlite_meta import bump_version, read_embedding_meta
from memory.store.sqlite_schema import fact_counter_key
from memory.store.sqlite_search import fact_filter_sql


class SQLiteManagement(MemoryStore):
    """The management half of SQLiteStore, which provides the transactions."""

    @abc.abstractmethod
    async def _read[T](self, body: Callable[[sqlite3.Connection], T]) -> T: ...

    @abc.abstractmethod
    async def _write[T](self, body: Callable[[sqlite3.Connection], T]) -> T: ...

    async def list_facts(
        self, flt: FactFilter, *, include_invalid: bool = False, offset: int = 0, limit: int = 50
    ) -> list[Fact]:
        where, params = fact_filter_sql(flt, valid_only=not include_invalid)
        sql = (
            f"SELECT {fact_columns('f')} FROM facts AS f WHERE {where} "
            "ORDER BY f.updated_at DESC, f.rowid DESC LIMIT ? OFFSET ?"
        )
        # A negative LIMIT would mean "no limit" to SQLite.
        args = (*params, max(limit, 0), max(offset, 0))
        rows = await self._read(lambda conn: conn.execute(sql, args).fetchall())
        return [fact_from_row(row) for row in rows]

    async def count_facts(self, flt: FactFilter) -> int:
        where, params = fact_filter_sql(flt)
        sql = f"SELECT count(*) FROM facts AS f WHERE {where}"
        row = await self._read(lambda conn: conn.execute(sql, params).fetchone())
        return int(row[0])

    async def edit_fact(
        self,
        fact_id: str,
        *,
        content: str,
        embedding: Vector,
        embedding_model: str,
        at: datetime,
        reason: str = "manual edit",
    ) -> Fact:
        if not content.strip():
            raise InvalidInputError("a fact cannot be empty")
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        body = partial(
            _edit_fact_tx, fact_id=fact_id, content=content, vector=vector,
            embedding_model=embedding_model, at=at, reason=reason,
        )  # fmt: skip
        return await self._write(body)

    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        return await self._write(
            partial(_invalidate_fact_tx, fact_id=fact_id, at=at, reason=reason)
        )

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        row = await self._read(
            lambda conn: conn.execute(
                "SELECT * FROM reflections WHERE reflection_id = ?", (reflection_id,)
            ).fetchone()
        )
        return None if row is None else reflection_from_row(row)

    async def list_reflections(
        self, key: ScopeKey, *, include_absorbed: bool = False, limit: int = 100
    ) -> list[Reflection]:
        buffered_only = "" if include_absorbed else " AND absorbed_into_version IS NULL"
        sql = (
            f"SELECT * FROM reflections WHERE scope_key = ?{buffered_only} "
            "ORDER BY formed_at DESC, rowid DESC LIMIT ?"
        )
        rows = await self._read(lambda conn: conn.execute(sql, (key.key, max(limit, 0))).fetchall())
        return [reflection_from_row(row) for row in rows]

    async def edit_reflection(self, reflection_id: str, *, content: str) -> Reflection:
        if not content.strip():
            raise InvalidInputError("a reflection cannot be empty")

        def edit(conn: sqlite3.Connection) -> Reflection:
            current = _buffered_reflection(conn, reflection_id, "edit")
            conn.execute(
                "UPDATE reflections SET content = ? WHERE reflection_id = ?",
                (content, reflection_id),
            )
            bump_version(conn, current.scope_key.key)
            return current.model_copy(update={"content": content})

        return await self._write(edit)

    async def delete_reflection(self, reflection_id: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            current = _buffered_reflection(conn, reflection_id, "delete")
            conn.execute("DELETE FROM reflections WHERE reflection_id = ?", (reflection_id,))
            bump_version(conn, current.scope_key.key)

        await self._write(delete)


def _load_fact(conn: sqlite3.Connection, fact_id: str) -> Fact:
    row = conn.execute(f"SELECT {FACT_COLUMNS} FROM facts WHERE fact_id = ?", (fact_id,)).fetchone()
    if row is None:
        raise NotFoundError(f"no fact {fact_id}")
    return fact_from_row(row)


def _edit_fact_tx(
    conn: sqlite3.Connection,
    fact_id: str,
    content: str,
    vector: Vector,
    embedding_model: str,
    at: datetime,
    reason: str,
) -> Fact:
    fact = _load_fact(conn, fact_id)
    if fact.invalidated_at is not None:
        raise ConflictError(f"fact {fact_id} was deleted: it can no longer be edited")
    meta = read_embedding_meta(conn)
    if meta != (embedding_model, vector.size):
        raise EmbeddingMismatchError(
            f"edit has {embedding_model}/{vector.size}, stored facts have "
            f"{'nothing' if meta is None else f'{meta[0]}/{meta[1]}'}"
        )
    hash_ = content_hash(content)
    duplicate = conn.execute(
        f"SELECT fact_id FROM facts WHERE {SAME_FACT_KEY} AND invalidated_at IS NULL "
        "AND fact_id != ?",
        (fact.agent_id, fact.user_id or "", fact.scope, hash_, fact_id),
    ).fetchone()
    if duplicate is not None:
        raise ConflictError(f"fact {fact_id} would duplicate fact {duplicate['fact_id']}")
    rewrite_fact(
        conn, fact, content=content, hash_=hash_, embedding=to_blob(vector),
        embedding_model=embedding_model, at=at, reason=reason,
        change_seq=bump_version(conn, fact_counter_key(fact.agent_id)),
    )  # fmt: skip
    bump_version(conn, fact_scope_key(fact.agent_id, fact.scope, fact.user_id))
    return _load_fact(conn, fact_id)


def _invalidate_fact_tx(conn: sqlite3.Connection, fact_id: str, at: datetime, reason: str) -> Fact:
    fact = _load_fact(conn, fact_id)
    if fact.invalidated_at is not None:
        return fact  # deleted already: nothing more to record
    revision = FactRevision(
        version=fact.version, content=fact.content, changed_at=at, reason=reason
    )
    conn.execute(
        "UPDATE facts SET invalidated_at = ?, history = ?, change_seq = ? WHERE fact_id = ?",
        (
            to_us(at),
            history_to_json((*fact.history, revision)),
            bump_version(conn, fact_counter_key(fact.agent_id)),
            fact_id,
        ),
    )
    bump_version(conn, fact_scope_key(fact.agent_id, fact.scope, fact.user_id))
    return _load_fact(conn, fact_id)


def _buffered_reflection(conn: sqlite3.Connection, reflection_id: str, action: str) -> Reflection:
    row = conn.execute(
        "SELECT * FROM reflections WHERE reflection_id = ?", (reflection_id,)
    ).fetchone()
    if row is None:
        raise NotFoundError(f"no reflection {reflection_id}")
    reflection = reflection_from_row(row)
    if reflection.absorbed_into_version is not None:
        raise ConflictError(
            f"cannot {action} reflection {reflection_id}: it is already absorbed into version "
            f"{reflection.absorbed_into_version} of {reflection.scope_key.key} (edit that instead)"
        )
    return reflection
