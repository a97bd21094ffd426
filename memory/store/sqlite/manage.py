"""The management reads of the SQLite backend (operators, backend UIs): list and count facts,
list reflections. Edits and deletes are planned (memory.store.planned)."""

from __future__ import annotations

import abc
import sqlite3
from collections.abc import Callable

from memory.models import Fact, FactFilter, Reflection, ScopeKey
from memory.store.planned import PlannedStore
from memory.store.sqlite.codec import fact_columns, fact_from_row, reflection_from_row
from memory.store.sqlite.reads import reflection
from memory.store.sqlite.search import fact_filter_sql


class SQLiteManagement(PlannedStore):
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

    async def get_reflection(self, reflection_id: str) -> Reflection | None:
        return await self._read(lambda conn: reflection(conn, reflection_id))
