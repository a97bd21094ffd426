"""Re-embedding's switch on PostgreSQL: one transaction swaps the side vectors of fact_reembed
(memory.store.sql.store) into facts with the embedding meta, and builds the new HNSW index."""

from __future__ import annotations

from memory.store.base_manage import side_tag
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.hnsw import ensure_hnsw_index, hnsw_index_name
from memory.store.postgres.pool import Conn
from memory.store.sql.reads import embedding_meta
from memory.store.sql.writes import put_embedding_meta


async def swap_side_vectors(conn: Conn, model: str, dimension: int) -> None:
    """rules.writes.SwapSideVectors."""
    old = await embedding_meta(PostgresDb(conn))
    if old is not None and old[1] != dimension:
        # Before the update: the old index's expression casts every vector to the old dimension.
        await conn.execute(f"DROP INDEX IF EXISTS {hnsw_index_name(old[1])}".encode())
    await conn.execute(
        "UPDATE facts SET embedding = r.embedding, embedding_model = %(model)s, "
        "body = jsonb_set(body, '{embedding_model}', to_jsonb(%(model)s::text)) "
        "FROM fact_reembed AS r WHERE r.fact_id = facts.fact_id AND r.model = %(tag)s "
        "AND r.hash = facts.hash",
        {"model": model, "tag": side_tag(model, dimension)},
    )
    await put_embedding_meta(PostgresDb(conn), model, dimension)
    await conn.execute("DELETE FROM fact_reembed")
    await ensure_hnsw_index(conn, dimension)
