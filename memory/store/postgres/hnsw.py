"""The facts' HNSW index on PostgreSQL: an expression index per dimension (``facts_hnsw_<dim>``),
created when the first vectors fix the dimension (an HNSW index needs one), and the expression
and predicate queries name to use it."""

from __future__ import annotations

from memory.store.postgres.pool import Conn

# pgvector's bounds for an HNSW index: 2,000 dimensions of vector, 4,000 of halfvec.
_HNSW_VECTOR_MAX, _HNSW_HALFVEC_MAX = 2000, 4000


def indexed_vector(dimension: int, column: str = "embedding") -> str:
    """The expression the HNSW index is built on and queries order by: ``column`` cast to
    vector(d); to halfvec(d) above 2,000 dimensions (a 3,072-value model: the index holds 16-bit
    values, the stored vectors stay 32-bit); above 4,000, vector(d) with no index (an exact
    scan, which the scope filter keeps small)."""
    kind = "halfvec" if _HNSW_VECTOR_MAX < dimension <= _HNSW_HALFVEC_MAX else "vector"
    return f"{column}::{kind}({int(dimension)})"


def hnsw_index_name(dimension: int) -> str:
    return f"facts_hnsw_{int(dimension)}"


def hnsw_index_sql(dimension: int) -> str | None:
    """The cosine HNSW index of the facts whose vectors have ``dimension`` values (valid ones:
    invalidated facts are never searched); None above pgvector's bound. Queries name the same
    expression (``indexed_vector``) and predicate (``hnsw_predicate``) to use it.

    The dimension is in the predicate, not only in the cast: a re-embed switch updates every
    vector and builds the new index in one transaction, and an index build also reads the row
    versions that transaction replaced (still visible to others): the old dimension's vectors,
    which the cast would refuse (unless each update had fitted on its page as a HOT update)."""
    if dimension > _HNSW_HALFVEC_MAX:
        return None
    expression = indexed_vector(dimension)
    ops = f"{expression.partition('::')[2].partition('(')[0]}_cosine_ops"
    return (
        f"CREATE INDEX IF NOT EXISTS {hnsw_index_name(dimension)} ON facts USING hnsw "
        f"(({expression}) {ops}) "
        f"WHERE invalidated_at IS NULL AND {hnsw_predicate(dimension, '')}"
    )


async def ensure_hnsw_index(conn: Conn, dimension: int) -> None:
    """Build the index unless it is there. Looked up first: CREATE INDEX IF NOT EXISTS takes its
    lock on facts before it finds the index, so at every start it would wait behind any open
    write on facts (an import, a re-embed), and every formation's commit behind it."""
    sql = hnsw_index_sql(dimension)
    if sql is None:
        return
    name = hnsw_index_name(dimension)
    found = await conn.execute("SELECT to_regclass(%s) IS NOT NULL AS built", (name,))
    row = await found.fetchone()
    if row is None or not row["built"]:
        await conn.execute(sql.encode())


def hnsw_predicate(dimension: int, alias: str = "f.") -> str:
    return f"vector_dims({alias}embedding) = {int(dimension)}"
