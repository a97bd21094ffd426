"""Text search of the SQLite backend: FTS5 finds the candidates (its built-in bm25() ranks them
with b = 0.75), then they are rescored on the shared scale (memory/store/rules/text.py, b = 0.15)
with FTS5's own statistics: its row count and average length (the index's averages record) and
each stemmed term's document frequency (the fts5vocab table)."""

from __future__ import annotations

import sqlite3

from memory.store.rules.text import bm25_scores, idf, stemmed_tokens

# FTS5 ranks a pool of this many candidates per result wanted (at least POOL_MIN) before the
# rescoring picks the best: on LoCoMo, 80 for 40 wanted gives the same recall as rescoring every
# match (200 too; the rescoring costs ~15 µs a candidate).
POOL_FACTOR = 2
POOL_MIN = 80
_AVERAGES_ROWID = 1  # FTS5 keeps "rows, tokens per column" in this row of its %_data table


def _varint(blob: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint (big-endian 7-bit groups, a 9th byte of 8 bits): value, next offset."""
    value = 0
    for i in range(8):
        byte = blob[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | blob[at + 8], at + 9


def index_stats(conn: sqlite3.Connection) -> tuple[int, float]:
    """(rows, average tokens per row) of the FTS5 index: the N and avgdl of its bm25()."""
    row = conn.execute(
        "SELECT block FROM facts_fts_data WHERE id = ?", (_AVERAGES_ROWID,)
    ).fetchone()
    if row is None or not row[0]:
        return 0, 0.0
    rows, at = _varint(bytes(row[0]), 0)
    tokens, _ = _varint(bytes(row[0]), at)
    return rows, tokens / rows if rows else 0.0


def rescored(
    conn: sqlite3.Connection, query: str, candidates: list[sqlite3.Row], limit: int
) -> list[tuple[sqlite3.Row, float]]:
    """The best ``limit`` candidates (rows with fact_id and content) by the shared BM25 scale,
    best first (ties: FTS5's order); only those matching a query term."""
    terms = list(dict.fromkeys(stemmed_tokens(query)))
    if not terms or not candidates:
        return []
    n_docs, avg_len = index_stats(conn)
    marks = ",".join("?" * len(terms))
    df = dict(conn.execute(f"SELECT term, doc FROM facts_fts_vocab WHERE term IN ({marks})", terms))
    n_docs = max(n_docs, len(candidates))
    idfs = {t: idf(n_docs, int(df.get(t, 1))) for t in terms}
    contents = {row["fact_id"]: row["content"] for row in candidates}
    scores = bm25_scores(terms, contents, idfs, avg_len, tokens=stemmed_tokens)
    ranked = sorted(
        ((i, row) for i, row in enumerate(candidates) if scores[row["fact_id"]] > 0),
        key=lambda pair: (-scores[pair[1]["fact_id"]], pair[0]),
    )
    return [(row, scores[row["fact_id"]]) for _, row in ranked[:limit]]
