"""Re-embedding on the SQLite backend: side vectors in fact_reembed until one transaction swaps
them into facts with the embedding meta (see MemoryStore.reembed_pending)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory.store.base import ReembedItem, Vector
from memory.store.sqlite.codec import to_blob
from memory.store.sqlite.meta import bump_version
from memory.store.sqlite.schema import fact_counter_key

# A fact is pending when its vector is of another model and it has no side vector of the model
# for its current content hash. (Parameters: the model, twice.)
_PENDING = """
FROM facts AS f LEFT JOIN fact_reembed AS r
    ON r.fact_id = f.fact_id AND r.model = ? AND r.hash = f.hash
WHERE r.fact_id IS NULL AND f.embedding_model != ?
"""


def pending_reembeds(conn: sqlite3.Connection, model: str, limit: int) -> list[ReembedItem]:
    rows = conn.execute(
        f"SELECT f.fact_id, f.content, f.hash {_PENDING} ORDER BY f.rowid LIMIT ?",
        (model, model, max(limit, 0)),
    ).fetchall()
    return [ReembedItem(row["fact_id"], row["content"], row["hash"]) for row in rows]


def count_pending_reembeds(conn: sqlite3.Connection, model: str) -> tuple[int, int]:
    left = conn.execute(f"SELECT count(*) {_PENDING}", (model, model)).fetchone()[0]
    total = conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    return int(left), int(total)


def put_side_vectors(
    conn: sqlite3.Connection, model: str, vectors: Sequence[tuple[ReembedItem, Vector]]
) -> None:
    conn.executemany(
        "INSERT INTO fact_reembed (fact_id, model, hash, embedding) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (fact_id) DO UPDATE SET model = excluded.model, hash = excluded.hash, "
        "embedding = excluded.embedding",
        [(item.fact_id, model, item.hash, to_blob(vector)) for item, vector in vectors],
    )


def swap_side_vectors(conn: sqlite3.Connection, model: str, dimension: int) -> None:
    """rules.writes.SwapSideVectors."""
    agents = [row[0] for row in conn.execute("SELECT DISTINCT agent_id FROM facts")]
    for agent_id in agents:
        # A new change_seq on every row: each process's vector cache reloads the agent.
        seq = bump_version(conn, fact_counter_key(agent_id))
        conn.execute(
            "UPDATE facts SET embedding = (SELECT r.embedding FROM fact_reembed AS r "
            "WHERE r.fact_id = facts.fact_id), embedding_model = ?, change_seq = ? "
            "WHERE agent_id = ? AND fact_id IN "
            "(SELECT r.fact_id FROM fact_reembed AS r WHERE r.model = ? AND r.hash = facts.hash)",
            (model, seq, agent_id, model),
        )
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [("embedding_model", model), ("embedding_dimension", str(dimension))],
    )
    conn.execute("DELETE FROM fact_reembed")
