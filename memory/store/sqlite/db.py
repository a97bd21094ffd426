"""The SQLite connection as the shared SQL sees it (memory.store.sql.db): psycopg-style
parameters translated to SQLite's, lists bound as IN lists of at most CHUNK values, and SQLite's
codec (memory.store.sqlite.codec: integer microseconds, JSON text, float32 BLOBs; the domain
records in columns)."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from pydantic import BaseModel

from memory.models import ConsolidatedMemory, Fact, Reflection
from memory.store.base import Vector
from memory.store.records import (
    blob_said_from,
    history_of,
    known,
    scope_key_of,
    to_record,
    vector_bytes,
    vector_of_bytes,
)
from memory.store.rules.writes import PutFact
from memory.store.sql.db import Db, Params, Row
from memory.store.sql.writes import bump_version
from memory.store.sqlite.codec import from_us, history_to_json, to_us
from memory.store.sqlite.fts import search_text_of
from memory.store.sqlite.schema import fact_counter_key

_ACCESS = {"access_count", "last_accessed_at"}
# Well under SQLite's limit on bound parameters per statement.
CHUNK = 500

_PARAM = re.compile(r"%\((\w+)\)s|%s|%%")


@functools.lru_cache(maxsize=512)
def sqlite_sql(sql: str) -> str:
    """psycopg's parameter style in SQLite's: %(name)s -> :name, %s -> ?, %% -> %."""
    return _PARAM.sub(lambda m: f":{m[1]}" if m[1] else ("?" if m[0] == "%s" else "%"), sql)


def _in_lists(
    sql: str, values: Sequence[object], first: tuple[object, ...], then: str = ""
) -> Iterator[tuple[str, tuple[object, ...]]]:
    """``sql`` (ending in the column compared) with an IN list per CHUNK values."""
    for start in range(0, len(values), CHUNK):
        chunk = values[start : start + CHUNK]
        marks = ", ".join("?" * len(chunk))
        yield f"{sqlite_sql(sql)} IN ({marks}) {then}", (*first, *chunk)


class SQLiteDb(Db):
    ord = "rowid"
    content = "content"
    fact_select = ", ".join(f"f.{name}" for name in Fact.model_fields)  # a fact's columns
    hand_deleted = "f.invalidated_at IS NOT NULL AND f.invalidated_by IS NULL"
    min_time = -(2**63)
    no_limit = -1
    set_reflection_content = "content = %s"
    tombstone_session = "substr(e.agent_key, 9 + instr(substr(e.agent_key, 9), ':'))"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # Every fact write of a transaction is stamped with one bump of the agent's fact
        # counter, so that every process's vector cache re-reads exactly those rows.
        self.stamps: dict[str, int] = {}

    async def fetch(self, sql: str, params: Params = ()) -> list[Row]:
        return cast(list[Row], self.conn.execute(sqlite_sql(sql), params).fetchall())

    async def fetch_one(self, sql: str, params: Params = ()) -> Row | None:
        return cast(Row | None, self.conn.execute(sqlite_sql(sql), params).fetchone())

    async def execute(self, sql: str, params: Params = ()) -> int:
        return self.conn.execute(sqlite_sql(sql), params).rowcount

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        self.conn.executemany(sqlite_sql(sql), rows)

    async def fetch_in(
        self, sql: str, values: Sequence[object], *first: object, then: str = ""
    ) -> list[Row]:
        rows: list[Row] = []
        for statement, params in _in_lists(sql, values, first, then):
            rows += self.conn.execute(statement, params).fetchall()
        return rows

    async def execute_in(self, sql: str, values: Sequence[object], *first: object) -> None:
        for statement, params in _in_lists(sql, values, first):
            self.conn.execute(statement, params)

    def time(self, value: datetime) -> object:
        return to_us(value)

    def time_of(self, value: Any) -> datetime:
        return from_us(value)

    def document(self, model: BaseModel) -> object:
        return model.model_dump_json()

    def model[M: BaseModel](self, cls: type[M], value: Any) -> M:
        return cls.model_validate(known(cls, json.loads(value)))

    def vector(self, vector: Vector | Sequence[float]) -> object:
        return vector_bytes(vector)

    def vector_of(self, value: Any) -> Vector:
        return vector_of_bytes(value)

    def fact(self, row: Row) -> Fact:
        # History and provenance are JSON text; any extra selected column is ignored.
        history = history_of(json.loads(row["history"]))
        sources = json.loads(row["source_message_ids"])
        return self.record(Fact, row, history=history, source_message_ids=sources)

    def reflection(self, row: Row) -> Reflection:
        record = dict(row)
        sources = json.loads(record.get("source_message_ids") or "[]")
        return self.record(
            Reflection, row, scope_key=scope_key_of(record), source_message_ids=sources
        )

    async def fact_row(self, put: PutFact) -> dict[str, object]:
        # The fact's fields but its access (touch_facts and SetFactAccess write those), then its
        # vector, change stamp, what the text index holds of its content (fts.search_text_of)
        # and when it was inserted (rules.recheck).
        fact = put.fact
        if (stamp := self.stamps.get(fact.agent_id)) is None:
            stamp = self.stamps[fact.agent_id] = await bump_version(
                self, fact_counter_key(fact.agent_id)
            )
        json_fields = {"source_message_ids", "history"}  # JSON text
        return to_record(fact, to_us, exclude=_ACCESS | json_fields) | {
            "embedding": None if put.embedding is None else vector_bytes(put.embedding),
            "source_message_ids": json.dumps(fact.source_message_ids),
            "history": history_to_json(fact.history),
            "change_seq": stamp,
            "search_text": search_text_of(fact.content),
            "inserted_at": to_us(datetime.now(UTC)),
        }

    def reflection_columns(self, reflection: Reflection) -> dict[str, object]:
        r = reflection
        return {
            "content": r.content, "source_session_id": r.source_session_id,
            "source_message_ids": json.dumps(r.source_message_ids),
            "formation_id": r.formation_id, "said_at": self.opt_time(r.said_at),
        }  # fmt: skip

    def consolidated_columns(self, blob: ConsolidatedMemory) -> dict[str, object]:
        return {
            "content": blob.content, "word_limit": blob.word_limit,
            "updated_at": self.time(blob.updated_at), "edited_by": blob.edited_by,
        }  # fmt: skip

    def consolidated(self, row: Row) -> ConsolidatedMemory:
        record = dict(row)
        said_from = blob_said_from(record, self.time_of)
        return self.record(
            ConsolidatedMemory, row, scope_key=scope_key_of(record), said_from=said_from
        )
