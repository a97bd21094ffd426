"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) of the records PostgreSQL
stores its own way (facts with their terms, JSONB bodies, vectors and their HNSW index, which a
re-embed's switch builds anew), inside the caller's transaction; the others are
memory.store.sql.writes'."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from memory.store.base_manage import side_tag
from memory.store.postgres.codec import UPSERT_ACCESS, fact_body, text_columns, vector_param
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.hnsw import ensure_hnsw_index, hnsw_index_name
from memory.store.postgres.pool import Conn
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sql.reads import embedding_meta
from memory.store.sql.writes import apply_shared, switched_embedding

_INSERT_FACT = """
INSERT INTO facts (fact_id, agent_id, user_id, scope, hash, said_at, said_utc_offset_minutes,
    updated_at, invalidated_at, embedding, embedding_model, terms, term_count, term_repeats, body,
    inserted_at)
VALUES (%(fact_id)s, %(agent_id)s, %(user_id)s, %(scope)s, %(hash)s, %(said_at)s,
    %(said_utc_offset_minutes)s, %(updated_at)s, %(invalidated_at)s, %(embedding)s,
    %(embedding_model)s, array_to_tsvector(%(terms)s), %(term_count)s, %(term_repeats)s, %(body)s,
    %(inserted_at)s)
"""
_UPDATE_FACT = """
UPDATE facts SET hash = %(hash)s, said_at = %(said_at)s,
    said_utc_offset_minutes = %(said_utc_offset_minutes)s, updated_at = %(updated_at)s,
    invalidated_at = %(invalidated_at)s, embedding = coalesce(%(embedding)s, embedding),
    embedding_model = %(embedding_model)s, terms = array_to_tsvector(%(terms)s),
    term_count = %(term_count)s, term_repeats = %(term_repeats)s, body = %(body)s
WHERE fact_id = %(fact_id)s
"""

# The fact's fields that are columns of their own (the whole fact is the body). The offset's
# column is what a process of the version before this one reads (codec.fact_from_row).
_FACT_FIELDS = {"fact_id", "agent_id", "user_id", "scope", "hash", "embedding_model"} | {
    "said_at", "said_utc_offset_minutes", "updated_at", "invalidated_at"
}  # fmt: skip


def _fact_params(put: w.PutFact) -> dict[str, object]:
    fact = put.fact
    return {
        **fact.model_dump(include=_FACT_FIELDS),
        "embedding": None if put.embedding is None else vector_param(put.embedding),
        **text_columns(fact.content),
        "body": fact_body(fact),
        # When inserted, by this writer's clock (rules.recheck); an update leaves it.
        "inserted_at": datetime.now(UTC),
    }


async def apply_writes(conn: Conn, writes: Iterable[w.Write]) -> None:
    # Runs of new facts go as one executemany (one round trip in psycopg's pipeline mode):
    # a formation or an import of many facts is not a round trip per fact.
    new_facts: list[dict[str, object]] = []
    for write in writes:
        if isinstance(write, w.PutFact) and write.new:
            new_facts.append(_fact_params(write))
            continue
        if new_facts:
            await conn.cursor().executemany(_INSERT_FACT, new_facts)
            new_facts = []
        await _apply(conn, write)
    if new_facts:
        await conn.cursor().executemany(_INSERT_FACT, new_facts)


async def _apply(conn: Conn, write: w.Write) -> None:
    db = PostgresDb(conn)
    match write:
        case w.PutFact():
            await conn.execute(_INSERT_FACT if write.new else _UPDATE_FACT, _fact_params(write))
        case w.SwapSideVectors(model=model, dimension=dimension):
            old = await embedding_meta(db)
            if old is not None and old[1] != dimension:
                # Before the update: the old index's expression casts every vector to the old
                # dimension.
                await conn.execute(f"DROP INDEX IF EXISTS {hnsw_index_name(old[1])}".encode())
            await conn.execute(
                "UPDATE facts SET embedding = r.embedding, embedding_model = %(model)s, "
                "body = jsonb_set(body, '{embedding_model}', to_jsonb(%(model)s::text)) "
                "FROM fact_reembed AS r WHERE r.fact_id = facts.fact_id AND r.model = %(tag)s "
                "AND r.hash = facts.hash",
                {"model": model, "tag": side_tag(model, dimension)},
            )
            await switched_embedding(db, model, dimension)
            await ensure_hnsw_index(conn, dimension)  # the new dimension's
        case w.SetEmbeddingMeta(dimension=dimension):
            await apply_shared(db, write)
            await ensure_hnsw_index(conn, dimension)
        case lw.SetFactAccess(fact_id=fact_id, access_count=n, last_accessed_at=at):
            await conn.execute(
                UPSERT_ACCESS.format(
                    rows="SELECT fact_id, %s, %s FROM facts WHERE fact_id = %s",
                    counts="access_count = excluded.access_count",
                ).encode(),
                (n, at, fact_id),
            )
        case _:
            await apply_shared(db, write)
