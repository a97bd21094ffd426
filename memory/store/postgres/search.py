"""Fact search on PostgreSQL: pgvector HNSW for vectors, a GIN-indexed tsvector for text, both
with the caller's filter (agent, scopes, validity) in the same SQL statement.

- vector: ``<=>`` (cosine distance) on the per-dimension HNSW expression index; score =
  1 - distance, the cosine. Iterative index scans (pgvector 0.8) keep walking the graph until
  the filtered query has its rows; the outer ORDER BY restores exact order among them. When the
  filter selects few facts the planner reads them by the btree index and sorts them exactly.
- text: the index finds the facts holding a query word's Porter stem (newest first, at most
  CANDIDATE_CAP); their scores are the shared BM25 (memory.store.rules.text) with N the count of
  the facts within the filter, never the whole table's: another agent's facts never move a
  score, and the scale is the other backends'.
"""

from __future__ import annotations

import functools

import numpy as np

from memory.models import FactFilter, ScoredFact
from memory.store.base import Vector
from memory.store.postgres.codec import FACT_SELECT, fact_from_row, vector_param
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.pool import Conn, fetch
from memory.store.postgres.schema import hnsw_predicate
from memory.store.rules.text import stem, stemmed_tokens, tokenize
from memory.store.sql.facts import fact_filter_sql, ranked_text_hits

CANDIDATE_CAP = 1000
STEMMED_CACHE = 50_000  # contents whose stems a worker keeps (~20 MB): the hot facts' texts


@functools.lru_cache(maxsize=STEMMED_CACHE)
def _stemmed(content: str) -> tuple[str, ...]:
    """A candidate's stems for BM25: stemming a thousand candidates per search costs more than
    the query (~5 ms), and the same facts come back search after search."""
    return tuple(stemmed_tokens(content))


MAX_TERMS = 64


def fact_count_sql(flt: FactFilter) -> tuple[str, dict[str, object]]:
    """How many valid facts the filter holds, from the deltas of fact_counts (migration 6)."""
    keys: list[str] = []
    params: dict[str, object] = {"cnt_agent": flt.agent_id}
    if flt.include_agent_scope:
        keys.append("(c.scope = 'agent' AND c.user_key = '')")
    if flt.user_id is not None:
        keys.append("(c.scope = 'user' AND c.user_key = %(cnt_user)s)")
        params["cnt_user"] = flt.user_id
    return (
        "SELECT coalesce(sum(c.n), 0) FROM fact_counts AS c "
        f"WHERE c.agent_id = %(cnt_agent)s AND ({' OR '.join(keys) or 'false'})",
        params,
    )


async def vector_hits(
    conn: Conn, query: Vector, flt: FactFilter, *, dimension: int, limit: int, min_score: float
) -> list[ScoredFact]:
    if limit <= 0:
        return []
    where, params = fact_filter_sql(flt)
    distance = f"f.embedding::vector({dimension}) <=> %(query)s"  # the index's expression
    rows = await fetch(
        conn,
        f"SELECT * FROM (SELECT {FACT_SELECT}, f.ord, {distance} AS distance FROM facts AS f "
        f"WHERE {where} AND {hnsw_predicate(dimension)} ORDER BY {distance} LIMIT %(limit)s) "
        "AS hits ORDER BY distance, ord",
        {**params, "query": vector_param(query), "limit": limit},
    )
    scored = []
    for row in rows:
        score = float(np.clip(1.0 - float(row["distance"]), -1.0, 1.0))
        if score >= min_score:
            scored.append(ScoredFact(fact=fact_from_row(row), score=score))
    return scored


def tsquery(query: str) -> tuple[list[str], str | None]:
    """The query's words (at most MAX_TERMS) and the tsquery OR-ing their stems. A stem is a
    \\w+ word, which holds no quote or backslash: quoting it keeps user text out of the tsquery
    syntax."""
    words = list(dict.fromkeys(tokenize(query)))[:MAX_TERMS]
    stems = [s for s in dict.fromkeys(stem(word) for word in words) if s]
    return words, " | ".join(f"'{s}'" for s in stems) or None


async def text_hits(conn: Conn, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
    words, match = tsquery(query)
    if match is None or limit <= 0:
        return []
    where, params = fact_filter_sql(flt)
    count, count_params = fact_count_sql(flt)
    rows = await fetch(
        conn,
        # One statement: the candidates with their content (a column in the row the filter
        # reads anyway, schema migration 5), and N (computed once, an InitPlan, and only when
        # there is a candidate).
        f"SELECT c.fact_id, c.content, ({count}) AS n "
        "FROM (SELECT f.fact_id, f.ord, f.content FROM facts AS f "
        f"WHERE f.terms @@ %(match)s::tsquery AND {where} ORDER BY f.ord DESC LIMIT %(cap)s) "
        "AS c ORDER BY c.ord DESC",
        {**params, **count_params, "match": match, "cap": CANDIDATE_CAP},
    )
    if not rows:
        return []
    docs = {row["fact_id"]: _stemmed(row["content"]) for row in rows}
    return await ranked_text_hits(PostgresDb(conn), words, docs, int(rows[0]["n"]), limit)
