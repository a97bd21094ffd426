"""The PostgreSQL connection as the shared SQL sees it (memory.store.sql.db): psycopg's own
parameter style, lists bound as arrays (``= ANY(%s)``), native timestamps, JSONB documents and
pgvector values (memory.store.postgres.codec)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

from psycopg.types.json import Jsonb
from pydantic import BaseModel

from memory.models import ConsolidatedMemory, Fact, Reflection
from memory.store.base import Vector
from memory.store.postgres.codec import (
    FACT_SELECT,
    consolidated_body,
    consolidated_from_row,
    fact_body,
    fact_from_row,
    from_vector,
    reflection_body,
    reflection_from_row,
    text_columns,
    vector_param,
)
from memory.store.postgres.pool import Conn, Row
from memory.store.records import known
from memory.store.rules.writes import PutFact
from memory.store.sql.db import Db, Params
from memory.store.sql.db import Row as AnyRow

# The fact's fields that are columns of their own (the whole fact is the body). The offset's
# column is what a process of the version before this one reads (codec.fact_from_row).
_FACT_FIELDS = {"fact_id", "agent_id", "user_id", "scope", "hash", "embedding_model"} | {
    "said_at", "said_utc_offset_minutes", "updated_at", "invalidated_at"
}  # fmt: skip


class PostgresDb(Db):
    ord = "ord"
    content = "body->>'content'"
    fact_select = FACT_SELECT
    hand_deleted = "f.invalidated_at IS NOT NULL AND (f.body->>'invalidated_by') IS NULL"
    min_time = datetime(1, 1, 1, tzinfo=UTC)
    no_limit = None  # LIMIT NULL
    json_param = "%s::jsonb"
    set_reflection_content = "body = jsonb_set(body, '{content}', to_jsonb(%s::text))"
    tombstone_session = "split_part(e.agent_key, ':', 3)"

    def __init__(self, conn: Conn) -> None:
        self.conn = conn

    async def fetch(self, sql: str, params: Params = ()) -> list[AnyRow]:
        cur = await self.conn.execute(sql.encode(), params)
        return cast(list[AnyRow], await cur.fetchall())

    async def fetch_one(self, sql: str, params: Params = ()) -> AnyRow | None:
        cur = await self.conn.execute(sql.encode(), params)
        return cast(AnyRow | None, await cur.fetchone())

    async def execute(self, sql: str, params: Params = ()) -> int:
        cur = await self.conn.execute(sql.encode(), params)
        return cur.rowcount

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        await self.conn.cursor().executemany(sql.encode(), rows)

    async def fetch_in(
        self, sql: str, values: Sequence[object], *first: object, then: str = ""
    ) -> list[AnyRow]:
        return await self.fetch(f"{sql} = ANY(%s) {then}", (*first, list(values)))

    async def execute_in(self, sql: str, values: Sequence[object], *first: object) -> None:
        await self.execute(f"{sql} = ANY(%s)", (*first, list(values)))

    def time(self, value: datetime) -> object:
        return value

    def time_of(self, value: Any) -> datetime:
        return cast(datetime, value)

    def document(self, model: BaseModel) -> object:
        return Jsonb(model.model_dump(mode="json"))

    def model[M: BaseModel](self, cls: type[M], value: Any) -> M:
        return cls.model_validate(known(cls, value))

    def vector(self, vector: Vector | Sequence[float]) -> object:
        return vector_param(vector)

    def vector_of(self, value: Any) -> Vector:
        return from_vector(value)

    def fact(self, row: AnyRow) -> Fact:
        return fact_from_row(cast(Row, row))

    def reflection(self, row: AnyRow) -> Reflection:
        return reflection_from_row(cast(Row, row))

    async def fact_row(self, put: PutFact) -> dict[str, object]:
        fact = put.fact
        return {
            **fact.model_dump(include=_FACT_FIELDS),
            "embedding": None if put.embedding is None else vector_param(put.embedding),
            **text_columns(fact.content),
            "body": fact_body(fact),
            # When inserted, by this writer's clock (rules.recheck); an update leaves it.
            "inserted_at": datetime.now(UTC),
        }

    def fact_value(self, column: str) -> str:
        # The lexemes (codec.text_columns) as the tsvector the GIN index holds.
        return "array_to_tsvector(%(terms)s)" if column == "terms" else super().fact_value(column)

    def reflection_columns(self, reflection: Reflection) -> dict[str, object]:
        return {"body": reflection_body(reflection)}

    def consolidated_columns(self, blob: ConsolidatedMemory) -> dict[str, object]:
        return {"body": consolidated_body(blob)}

    def consolidated(self, row: AnyRow) -> ConsolidatedMemory:
        return consolidated_from_row(cast(Row, row))
