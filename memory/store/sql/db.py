"""One connection of an SQL backend, inside a transaction, as the shared SQL sees it.

Shared SQL is written in psycopg's parameter style (``%s``, ``%(name)s``); the SQLite connection
translates it. A list is bound by ``fetch_in``/``execute_in``: ``= ANY(array)`` on PostgreSQL,
``IN (?, …)`` lists on SQLite. Values go in and come out through the connection's codec
(timestamps, JSON documents, vectors), rows by column name (``AS`` names every computed one).

The methods are coroutines so one body of shared code serves both backends: PostgreSQL's
await the server; SQLite's run on its own thread and never suspend (``snapshots.run_sync``)."""

from __future__ import annotations

import abc
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel

from memory.models import ConsolidatedMemory, Fact, Reflection, SessionAgentState, StoredMessage
from memory.store.base import Vector
from memory.store.records import from_record, state_of
from memory.store.rules.writes import PutFact

type Params = Sequence[object] | Mapping[str, object]


class Row(Protocol):
    """A result row: sqlite3.Row or psycopg's dict row, read by column name."""

    def __getitem__(self, key: str, /) -> Any: ...

    def keys(self) -> Any: ...


class Db(abc.ABC):
    """A connection in a transaction: its statements, then its codec."""

    # The column that holds insertion order (join order of session members, reflections' ties).
    ord: str
    # A fact's, a reflection's or a blob's content, as an expression of its table's row.
    content: str
    # The select list of one fact of ``facts AS f``, what ``fact`` decodes.
    fact_select: str
    # A fact of ``facts AS f`` a person deleted (invalidated, by no fact): the terms of the
    # partial index the commit's read of them uses (rules.versions.deleted_by_hand).
    hand_deleted: str
    # Below every stored timestamp: where a first page of an ordered scan starts.
    min_time: object
    # The LIMIT that means none.
    no_limit: object
    # The placeholder of a JSON text for a JSON column (cast where the column is not text).
    json_param: str = "%s"
    # The SET of a reflection's content to the parameter: its column, or its body's field.
    set_reflection_content: str
    # The session id of a session tombstone ``erasures AS e``: its agent key's part after the
    # second colon (``session:{agent}:{session}``, models.ScopeKey.key; no id holds a colon).
    tombstone_session: str

    @abc.abstractmethod
    async def fetch(self, sql: str, params: Params = ()) -> list[Row]: ...

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        rows = await self.fetch(sql, params)
        return rows[0] if rows else None

    @abc.abstractmethod
    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; the number of rows it changed."""

    @abc.abstractmethod
    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None: ...

    @abc.abstractmethod
    async def fetch_in(
        self, sql: str, values: Sequence[object], *first: object, then: str = ""
    ) -> list[Row]:
        """The rows of ``sql`` (ending in the column compared) for every value; ``first`` are
        the parameters before the list, ``then`` SQL after it (without parameters)."""

    @abc.abstractmethod
    async def execute_in(self, sql: str, values: Sequence[object], *first: object) -> None:
        """``sql`` (ending in the column compared) for every value."""

    async def fetch_in_or_all(self, sql: str, values: Sequence[object] | None) -> list[Row]:
        """``fetch_in``; None: every row (``sql``'s column, a primary key, is never null)."""
        return await (
            self.fetch(f"{sql} IS NOT NULL") if values is None else self.fetch_in(sql, values)
        )

    async def column(self, sql: str, *params: object) -> list[Any]:
        """The first column of a query's rows."""
        return [row[next(iter(row.keys()))] for row in await self.fetch(sql, params)]

    async def column_in(self, sql: str, values: Sequence[object], *first: object) -> set[Any]:
        """The first column of ``fetch_in``'s rows."""
        return {row[next(iter(row.keys()))] for row in await self.fetch_in(sql, values, *first)}

    # ------------------------------------------------------------ codec

    @abc.abstractmethod
    def time(self, value: datetime) -> object: ...

    def opt_time(self, value: datetime | None) -> object:
        return None if value is None else self.time(value)

    @abc.abstractmethod
    def time_of(self, value: Any) -> datetime: ...

    def opt_time_of(self, value: Any) -> datetime | None:
        return None if value is None else self.time_of(value)

    @abc.abstractmethod
    def document(self, model: BaseModel) -> object:
        """A model stored whole (agent configs, API keys, formation results)."""

    @abc.abstractmethod
    def model[M: BaseModel](self, cls: type[M], value: Any) -> M:
        """A model stored whole, read back."""

    @abc.abstractmethod
    def vector(self, vector: Vector | Sequence[float]) -> object: ...

    @abc.abstractmethod
    def vector_of(self, value: Any) -> Vector: ...

    def record[M: BaseModel](self, cls: type[M], row: Row, **fields: Any) -> M:
        """A model from a row of plain columns, timestamps decoded."""
        return from_record(cls, dict(row), self.time_of, **fields)

    @abc.abstractmethod
    def fact(self, row: Row) -> Fact:
        """A row selected with ``fact_select``."""

    @abc.abstractmethod
    def reflection(self, row: Row) -> Reflection:
        """A ``SELECT *`` row of reflections."""

    @abc.abstractmethod
    def consolidated(self, row: Row) -> ConsolidatedMemory:
        """A ``SELECT *`` row of consolidated."""

    @abc.abstractmethod
    async def fact_row(self, put: PutFact) -> dict[str, object]:
        """The columns of facts a PutFact writes, by name (an update, all but what it keeps:
        sql.writes)."""

    def fact_value(self, column: str) -> str:
        """The SQL of a fact column's value in its INSERT or UPDATE: its parameter."""
        return f"%({column})s"

    @abc.abstractmethod
    def reflection_columns(self, reflection: Reflection) -> dict[str, object]:
        """A reflections row's columns beyond its scope key's, formed_at and absorbed."""

    @abc.abstractmethod
    def consolidated_columns(self, blob: ConsolidatedMemory) -> dict[str, object]:
        """A consolidated row's columns beyond its scope key's, version and said_from."""

    def state(self, row: Row) -> SessionAgentState:
        """A row selected by sessions.STATE_SQL."""
        return state_of(dict(row), self.time_of)

    def message(self, row: Row) -> StoredMessage:
        return self.record(StoredMessage, row)


type Body[D: Db, T] = Callable[[D], Coroutine[Any, Any, T]]


class Transactions[D: Db](abc.ABC):
    """A backend's transactions, which the shared store calls take; D: its connection."""

    @abc.abstractmethod
    async def _db_read[T](self, body: Body[D, T]) -> T:
        """``body`` on one snapshot."""

    @abc.abstractmethod
    async def _db_write[T](self, body: Body[D, T]) -> T:
        """``body`` in one writing transaction."""

    async def _db_one[T](self, body: Body[D, T]) -> T:
        """``body`` of a single statement, which needs no transaction of its own."""
        return await self._db_read(body)
