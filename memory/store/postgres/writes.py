"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) of the records PostgreSQL
stores its own way (facts with their terms, JSONB bodies, vectors and their HNSW index, which a
re-embed's switch builds anew), inside the caller's transaction; the others are
memory.store.sql.writes'."""

from __future__ import annotations

from memory.store.base_manage import side_tag
from memory.store.postgres.codec import UPSERT_ACCESS
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.hnsw import ensure_hnsw_index, hnsw_index_name
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sql.reads import SqlReads
from memory.store.sql.writes import apply_shared, switched_embedding


async def apply_own(db: PostgresDb, write: w.Write) -> None:
    """A write (sql.writes.apply_writes hands each but runs of new facts here)."""
    conn = db.conn
    match write:
        case w.SwapSideVectors(model=model, dimension=dimension):
            old = await SqlReads(db).embedding_meta()
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
