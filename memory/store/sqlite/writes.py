"""The planners' writes (memory.store.rules.writes, .lifecycle_writes) of the records SQLite
stores its own way (facts with their change stamps, which a re-embed's switch renews, and the FTS
index a deletion compacts), inside the caller's transaction; the others are
memory.store.sql.writes'."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime

from memory.models import Fact
from memory.store.base_manage import side_tag
from memory.store.records import to_record, vector_bytes
from memory.store.rules import lifecycle_writes as lw
from memory.store.rules import writes as w
from memory.store.sql.writes import apply_shared, bump_version, switched_embedding
from memory.store.sqlite.codec import history_to_json, to_us
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.fts import search_text_of
from memory.store.sqlite.schema import fact_counter_key, facts_purge_key

# The columns a PutFact writes: the fact's fields but its access (touch_facts and SetFactAccess
# write those), then its vector, change stamp, what the text index holds of its content
# (fts.search_text_of) and when it was inserted (rules.recheck). An update keeps whose fact it
# is, when it was formed and inserted, and its vector unless it brings a new one.
_ACCESS = {"access_count", "last_accessed_at"}
_COLUMNS = [
    *(name for name in Fact.model_fields if name not in _ACCESS),
    *("embedding", "change_seq", "search_text", "inserted_at"),
]
_KEPT = {"fact_id", "agent_id", "user_id", "scope", "formed_at", "inserted_at"}
_INSERT_FACT = (
    f"INSERT INTO facts ({', '.join(_COLUMNS)}) VALUES ({', '.join(f':{c}' for c in _COLUMNS)})"
)
_SET = ", ".join(f"{c} = :{c}" for c in _COLUMNS if c not in _KEPT | {"embedding"})
_UPDATE_FACT = (
    f"UPDATE facts SET {_SET}, embedding = coalesce(:embedding, embedding) WHERE fact_id = :fact_id"
)


def _put_fact(conn: sqlite3.Connection, put: w.PutFact, change_seq: int) -> None:
    fact = put.fact
    json_fields = {"source_message_ids", "history"}  # JSON text
    params = to_record(fact, to_us, exclude=_ACCESS | json_fields)
    params |= {
        "embedding": None if put.embedding is None else vector_bytes(put.embedding),
        "source_message_ids": json.dumps(fact.source_message_ids),
        "history": history_to_json(fact.history),
        "change_seq": change_seq,
        "search_text": search_text_of(fact.content),
        "inserted_at": to_us(datetime.now(UTC)),
    }
    conn.execute(_INSERT_FACT if put.new else _UPDATE_FACT, params)


async def apply_writes(db: SQLiteDb, writes: Iterable[w.Write]) -> None:
    # Every fact write of a transaction is stamped with one bump of the agent's fact counter,
    # so that every process's vector cache re-reads exactly those rows.
    stamps: dict[str, int] = {}
    for write in writes:
        await _apply(db, write, stamps)


async def _apply(db: SQLiteDb, write: w.Write, stamps: dict[str, int]) -> None:
    conn = db.conn
    match write:
        case w.PutFact(fact=fact):
            if fact.agent_id not in stamps:
                stamps[fact.agent_id] = await bump_version(db, fact_counter_key(fact.agent_id))
            _put_fact(conn, write, stamps[fact.agent_id])
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
