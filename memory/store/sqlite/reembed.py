"""Re-embedding's switch on the SQLite backend: one transaction swaps the side vectors of
fact_reembed (memory.store.sql.store) into facts with the embedding meta."""

from __future__ import annotations

from memory.store.base_manage import side_tag
from memory.store.sql.writes import bump_version, put_embedding_meta
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.schema import fact_counter_key


async def swap_side_vectors(db: SQLiteDb, model: str, dimension: int) -> None:
    """rules.writes.SwapSideVectors."""
    conn = db.conn
    tag = side_tag(model, dimension)
    agents = [row[0] for row in conn.execute("SELECT DISTINCT agent_id FROM facts")]
    for agent_id in agents:
        # A new change_seq on every row: each process's vector cache reloads the agent.
        seq = await bump_version(db, fact_counter_key(agent_id))
        conn.execute(
            "UPDATE facts SET embedding = (SELECT r.embedding FROM fact_reembed AS r "
            "WHERE r.fact_id = facts.fact_id), embedding_model = ?, change_seq = ? "
            "WHERE agent_id = ? AND fact_id IN "
            "(SELECT r.fact_id FROM fact_reembed AS r WHERE r.model = ? AND r.hash = facts.hash)",
            (model, seq, agent_id, tag),
        )
    await put_embedding_meta(db, model, dimension)
    conn.execute("DELETE FROM fact_reembed")
