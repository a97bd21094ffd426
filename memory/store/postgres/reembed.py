"""Re-embedding on PostgreSQL: side vectors in fact_reembed until one transaction swaps them into
facts with the embedding meta (see MemoryStore.reembed_pending)."""

from __future__ import annotations

from collections.abc import Sequence

from memory.store.base import ReembedItem, Vector
from memory.store.postgres.codec import vector_param
from memory.store.postgres.pool import Conn, embedding_meta, fetch, fetch_one
from memory.store.postgres.schema import hnsw_index_sql

# A fact is pending when its vector is of another model and it has no side vector of the model
# for its current content hash.
_PENDING = """
FROM facts AS f LEFT JOIN fact_reembed AS r
    ON r.fact_id = f.fact_id AND r.model = %(model)s AND r.hash = f.hash
WHERE r.fact_id IS NULL AND f.embedding_model != %(model)s
"""


async def pending_reembeds(conn: Conn, model: str, limit: int) -> list[ReembedItem]:
    rows = await fetch(
        conn,
        f"SELECT f.fact_id, f.body->>'content' AS content, f.hash {_PENDING} "
        "ORDER BY f.ord LIMIT %(limit)s",
        {"model": model, "limit": max(limit, 0)},
    )
    return [ReembedItem(row["fact_id"], row["content"], row["hash"]) for row in rows]


async def count_pending_reembeds(conn: Conn, model: str) -> tuple[int, int]:
    left = await fetch_one(conn, f"SELECT count(*) AS n {_PENDING}", {"model": model})
    total = await fetch_one(conn, "SELECT count(*) AS n FROM facts")
    assert left is not None and total is not None
    return int(left["n"]), int(total["n"])


async def put_side_vectors(
    conn: Conn, model: str, vectors: Sequence[tuple[ReembedItem, Vector]]
) -> None:
    await conn.cursor().executemany(
        "INSERT INTO fact_reembed (fact_id, model, hash, embedding) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (fact_id) DO UPDATE SET model = excluded.model, hash = excluded.hash, "
        "embedding = excluded.embedding",
        [(item.fact_id, model, item.hash, vector_param(vector)) for item, vector in vectors],
    )


async def swap_side_vectors(conn: Conn, model: str, dimension: int) -> None:
    """rules.writes.SwapSideVectors."""
    old = await embedding_meta(conn)
    if old is not None and old[1] != dimension:
        # Before the update: the old index's expression casts every vector to the old dimension.
        await conn.execute(f"DROP INDEX IF EXISTS facts_hnsw_{old[1]}".encode())
    await conn.execute(
        "UPDATE facts SET embedding = r.embedding, embedding_model = %(model)s, "
        "body = jsonb_set(body, '{embedding_model}', to_jsonb(%(model)s::text)) "
        "FROM fact_reembed AS r WHERE r.fact_id = facts.fact_id AND r.model = %(model)s "
        "AND r.hash = facts.hash",
        {"model": model},
    )
    await conn.execute(
        "INSERT INTO meta (key, value) VALUES ('embedding_model', %s), "
        "('embedding_dimension', %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (model, str(dimension)),
    )
    await conn.execute("DELETE FROM fact_reembed")
    await conn.execute(hnsw_index_sql(dimension).encode())
