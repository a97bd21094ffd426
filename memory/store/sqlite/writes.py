"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) of the records SQLite
stores its own way (facts with their change stamps, which a re-embed's switch renews, and the FTS
index a deletion compacts), inside the caller's transaction; the others are
memory.store.sql.writes'."""

from __future__ import annotations

from memory.store.base_manage import side_tag
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sql.writes import apply_shared, bump_version, switched_embedding
from memory.store.sqlite.codec import to_us
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.schema import fact_counter_key, facts_purge_key


async def apply_own(db: SQLiteDb, write: w.Write) -> None:
    """A write (sql.writes.apply_writes hands each but runs of new facts here)."""
    conn = db.conn
    match write:
        case w.SwapSideVectors(model=model, dimension=dimension):
            tag = side_tag(model, dimension)
            for agent_id in [row[0] for row in conn.execute("SELECT DISTINCT agent_id FROM facts")]:
                # A new change_seq on every row: each process's vector cache reloads the agent.
                seq = await bump_version(db, fact_counter_key(agent_id))
                conn.execute(
                    "UPDATE facts SET embedding = (SELECT r.embedding FROM fact_reembed AS r "
                    "WHERE r.fact_id = facts.fact_id), embedding_model = ?, change_seq = ? "
                    "WHERE agent_id = ? AND fact_id IN (SELECT r.fact_id FROM fact_reembed AS r "
                    "WHERE r.model = ? AND r.hash = facts.hash)",
                    (model, seq, agent_id, tag),
                )
            await switched_embedding(db, model, dimension)
        case lw.SetFactAccess(fact_id=fact_id, access_count=n, last_accessed_at=at):
            conn.execute(
                "UPDATE facts SET access_count = ?, last_accessed_at = ? WHERE fact_id = ?",
                (n, None if at is None else to_us(at), fact_id),
            )
        case lw.DeleteFacts(agent_id=agent_id):
            # The FTS rows go with them (facts_fts_delete trigger); history is in the row.
            await apply_shared(db, write)
            # FTS5 without its secure-delete option (off by default, absent before SQLite 3.42)
            # only appends a delete marker: the erased terms stay in facts_fts_data until a
            # merge rewrites their segments.
            # 'optimize' merges them all into one, now, in the erasure's own transaction.
            conn.execute("INSERT INTO facts_fts (facts_fts) VALUES ('optimize')")
            await bump_version(db, facts_purge_key(agent_id))
        case _:
            await apply_shared(db, write)
