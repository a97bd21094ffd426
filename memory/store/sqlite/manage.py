"""The management methods of the SQLite backend (operators, backend UIs): list, edit, delete.

A person's edit or delete is planned by memory.store.rules and applied in one BEGIN IMMEDIATE
transaction, like a formation.
"""

from __future__ import annotations

import abc
import sqlite3
from collections.abc import Callable
from datetime import datetime

import numpy as np

from memory.ids import content_hash
from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.base import MemoryStore, Vector
from memory.store.rules import (
    plan_delete_reflection,
    plan_edit_fact,
    plan_edit_reflection,
    plan_invalidate_fact,
)
from memory.store.sqlite.codec import fact_columns, fact_from_row, reflection_from_row
from memory.store.sqlite.meta import read_embedding_meta
from memory.store.sqlite.reads import facts_with_hashes
from memory.store.sqlite.search import fact_filter_sql, facts_by_id
from memory.store.sqlite.writes import apply_writes


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
        vector = [float(x) for x in np.asarray(embedding, dtype=np.float32).reshape(-1)]

        def edit(conn: sqlite3.Connection) -> Fact:
            fact = next(iter(facts_by_id(conn, [fact_id])), None)
            same = (
                []
                if fact is None
                else facts_with_hashes(conn, fact.agent_id, [content_hash(content)])
            )
            plan = plan_edit_fact(
                fact_id, content=content, embedding=vector, embedding_model=embedding_model,
                at=at, reason=reason, fact=fact, same_content=same,
                embedding_meta=read_embedding_meta(conn),
            )  # fmt: skip
            apply_writes(conn, plan.writes)
            return plan.result

        return await self._write(edit)

    async def invalidate_fact(
        self, fact_id: str, *, at: datetime, reason: str = "manual delete"
    ) -> Fact:
        def delete(conn: sqlite3.Connection) -> Fact:
            fact = next(iter(facts_by_id(conn, [fact_id])), None)
            plan = plan_invalidate_fact(fact_id, at=at, reason=reason, fact=fact)
            apply_writes(conn, plan.writes)
            return plan.result

        return await self._write(delete)

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
        def edit(conn: sqlite3.Connection) -> Reflection:
            plan = plan_edit_reflection(reflection_id, content, _reflection(conn, reflection_id))
            apply_writes(conn, plan.writes)
            return plan.result

        return await self._write(edit)

    async def delete_reflection(self, reflection_id: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            plan = plan_delete_reflection(reflection_id, _reflection(conn, reflection_id))
            apply_writes(conn, plan.writes)

        await self._write(delete)

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._read(lambda conn: _reflection(conn, reflection_id))


def _reflection(conn: sqlite3.Connection, reflection_id: str) -> Reflection | None:
    row = conn.execute(
        "SELECT * FROM reflections WHERE reflection_id = ?", (reflection_id,)
    ).fetchone()
    return None if row is None else reflection_from_row(row)
