"""The SQLite connection as the shared SQL sees it (memory.store.sql.db): psycopg-style
parameters translated to SQLite's, lists bound as IN lists of at most CHUNK values, and the
codec of memory.store.sqlite.codec (integer microseconds, JSON text, float32 BLOBs)."""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, cast

from pydantic import BaseModel

from memory.models import ConsolidatedMemory, Fact, Reflection
from memory.store.base import Vector
from memory.store.sql.db import Db, Params, Row
from memory.store.sqlite.codec import (
    consolidated_from_row,
    fact_columns,
    fact_from_row,
    from_blob,
    from_us,
    reflection_from_row,
    to_blob,
    to_us,
)

# Well under SQLite's limit on bound parameters per statement.
CHUNK = 500

_PARAM = re.compile(r"%\((\w+)\)s|%s|%%")


@functools.lru_cache(maxsize=512)
def sqlite_sql(sql: str) -> str:
    """psycopg's parameter style in SQLite's: %(name)s -> :name, %s -> ?, %% -> %."""
    return _PARAM.sub(
        lambda m: f":{m[1]}" if m[1] else ("?" if m[0] == "%s" else "%"),
        sql,
    )


def chunks[T](items: Sequence[T]) -> Iterator[Sequence[T]]:
    """Slices of at most CHUNK items: one IN (...) list each."""
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def marks(items: Sequence[object]) -> str:
    """The placeholders of an IN list: '?, ?, ?'."""
    return ", ".join("?" * len(items))


class SQLiteDb(Db):
    ord = "rowid"
    content = "content"
    fact_select = fact_columns("f")
    min_time = -(2**63)
    no_limit = -1

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], self.conn.execute(sqlite_sql(sql), params).fetchall())

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, self.conn.execute(sqlite_sql(sql), params).fetchone())

    async def execute(self, sql: str, params: Params = ()) -> int:
        return self.conn.execute(sqlite_sql(sql), params).rowcount

    async def execute_many(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        self.conn.executemany(sqlite_sql(sql), rows)

    async def fetch_in(
        self, sql: str, values: Sequence[object], *first: object, then: str = ""
    ) -> list[Row]:
        rows: list[Row] = []
        for chunk in chunks(values):
            statement = f"{sqlite_sql(sql)} IN ({marks(chunk)}) {then}"
            rows += self.conn.execute(statement, (*first, *chunk)).fetchall()
        return rows

    async def execute_in(self, sql: str, values: Sequence[object], *first: object) -> None:
        for chunk in chunks(values):
            self.conn.execute(f"{sqlite_sql(sql)} IN ({marks(chunk)})", (*first, *chunk))

    def time(self, value: datetime) -> object:
        return to_us(value)

    def time_of(self, value: Any) -> datetime:
        return from_us(value)

    def document(self, model: BaseModel) -> object:
        return model.model_dump_json()

    def model[M: BaseModel](self, cls: type[M], value: Any) -> M:
        return cls.model_validate_json(value)

    def vector(self, vector: Vector | Sequence[float]) -> object:
        return to_blob(vector)

    def vector_of(self, value: Any) -> Vector:
        return from_blob(value)

    def fact(self, row: Row) -> Fact:
        return fact_from_row(cast(sqlite3.Row, row))

    def reflection(self, row: Row) -> Reflection:
        return reflection_from_row(cast(sqlite3.Row, row))

    def consolidated(self, row: Row) -> ConsolidatedMemory:
        return consolidated_from_row(cast(sqlite3.Row, row))
