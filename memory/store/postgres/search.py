"""Fact search on PostgreSQL: pgvector HNSW for vectors, a GIN-indexed tsvector for text, both
with the caller's filter (agent, scopes, validity) in the same SQL statement.

- vector: ``<=>`` (cosine distance) on the per-dimension HNSW expression index; score =
  1 - distance, the cosine. Iterative index scans (pgvector 0.8) keep walking the graph until
  the filtered query has its rows; the outer ORDER BY restores exact order among them. When the
  filter selects few facts the planner reads them by the btree index and sorts them exactly.
- text: the index finds the facts holding a query word's Porter stem (newest first, at most
  CANDIDATE_CAP); their scores are the shared BM25 (memory.store.rules.text) with N the count of
  the facts within the filter, never the whole table's: another agent's facts never move a
  score, and the scale is the other backends'. A phrase of the query (rules.text.query_parts:
  "a-17") finds the facts holding its stems whose content holds its words next to each other.
  The statement returns each candidate's counts of the query stems and its length (schema
  migration 7), not its text: fetching and stemming a thousand contents took most of a
  search's time at 100k facts.
"""

from __future__ import annotations

import functools

import numpy as np

from memory.models import FactFilter, ScoredFact
from memory.store.base import Vector
from memory.store.postgres.codec import is_lexeme, vector_param
from memory.store.postgres.db import PostgresDb
from memory.store.postgres.hnsw import hnsw_predicate, indexed_vector
from memory.store.ranking import best
from memory.store.rules.filters import scope_branches
from memory.store.rules.text import (
    CANDIDATE_CAP,
    bm25_of_counts,
    query_parts,
    query_stems,
    query_terms,
    stemmed_tokens,
)
from memory.store.sql.db import Row
from memory.store.sql.facts import best_scored, fact_filter_sql

STEMMED_CACHE = 10_000  # contents of facts stored before schema migration 7 (see _counted)


@functools.lru_cache(maxsize=STEMMED_CACHE)
def _stemmed(content: str) -> tuple[str, ...]:
    """The stems of a fact stored before its counts were (schema migration 7)."""
    return tuple(stemmed_tokens(content))


def fact_count_sql(flt: FactFilter) -> tuple[str, dict[str, object]]:
    """How many valid facts the filter holds, from the deltas of fact_counts (migration 6)."""
    keys: list[str] = []
    params: dict[str, object] = {"cnt_agent": flt.agent_id}
    for branch in scope_branches(flt):
        user = "''" if branch.user_id is None else "%(cnt_user)s"
        keys.append(f"(c.scope = '{branch.scope}' AND c.user_key = {user})")
        if branch.user_id is not None:
            params["cnt_user"] = branch.user_id
    return (
        "SELECT coalesce(sum(c.n), 0) FROM fact_counts AS c "
        f"WHERE c.agent_id = %(cnt_agent)s AND ({' OR '.join(keys) or 'false'})",
        params,
    )


async def vector_hits(
    db: PostgresDb, query: Vector, flt: FactFilter, *, dimension: int, limit: int, min_score: float
) -> list[ScoredFact]:
    where, params = fact_filter_sql(flt)
    expression = indexed_vector(dimension, "f.embedding")  # the index's
    distance = f"{expression} <=> %(query)s::{expression.partition('::')[2]}"
    rows = await db.fetch(
        f"SELECT * FROM (SELECT {db.fact_select}, f.ord, {distance} AS distance FROM facts AS f "
        f"WHERE {where} AND {hnsw_predicate(dimension)} ORDER BY {distance} LIMIT %(limit)s) "
        "AS hits ORDER BY distance, ord",
        {**params, "query": vector_param(query), "limit": limit},
    )
    # In the statement's order (distance, then insertion), which equal scores keep.
    hits = [(row, float(np.clip(1.0 - float(row["distance"]), -1.0, 1.0))) for row in rows]
    return [ScoredFact(fact=db.fact(r), score=s) for r, s in best(hits, limit, min_score)]


def tsquery(query: str) -> tuple[list[str], str | None]:
    """The query's stems (of its first MAX_TERMS words: what BM25 counts), each once, and the
    tsquery OR-ing those of its words found alone (rules.text.query_parts: not a phrase's). A
    stem is a \\w+ word, which holds no quote or backslash: quoting it keeps user text out of
    the tsquery syntax. A stem too long for a lexeme is left out: no fact's index holds it."""
    stems = [s for s in query_stems(query_terms(query)) if is_lexeme(s)]
    alone = [s for s in query_stems(query_parts(query)[0]) if is_lexeme(s)]
    return stems, " | ".join(f"'{s}'" for s in alone) or None


_NOT_WORD = "[^[:alnum:]_]"


def _phrase_sql(phrases: list[tuple[str, ...]]) -> tuple[list[str], dict[str, object]]:
    """The conditions finding each phrase (rules.text.query_parts): the GIN index finds the
    facts holding all its stems (the terms hold no positions, which <-> needs), the content
    those that hold its words next to each other, apart by what is not a word ("A-17",
    "$55,007"), case-insensitively (the words are folded)."""
    conditions: list[str] = []
    params: dict[str, object] = {}
    for i, words in enumerate(phrases):
        stems = query_stems(words)
        if not all(is_lexeme(s) for s in stems):
            continue  # no fact's index holds it
        params[f"phrase{i}"] = " & ".join(f"'{s}'" for s in stems)
        params[f"next{i}"] = f"(^|{_NOT_WORD}){f'{_NOT_WORD}+'.join(words)}($|{_NOT_WORD})"
        conditions.append(f"(f.terms @@ %(phrase{i})s::tsquery AND f.content ~* %(next{i})s)")
    return conditions, params


def _counts(stems: list[str]) -> tuple[str, dict[str, object]]:
    """A candidate's count of each query stem, in order, as an int[]: 0 unless its terms hold
    the stem, else its repeat count or 1. Both are columns of the row (schema migration 7)."""
    params: dict[str, object] = {}
    counts = []
    for i, s in enumerate(stems):
        params |= {f"lex{i}": f"'{s}'", f"stem{i}": s}
        counts.append(
            f"CASE WHEN c.terms @@ %(lex{i})s::tsquery "
            f"THEN coalesce((c.term_repeats ->> %(stem{i})s::text)::int, 1) ELSE 0 END"
        )
    return f"ARRAY[{', '.join(counts)}]", params


async def text_hits(db: PostgresDb, query: str, flt: FactFilter, limit: int) -> list[ScoredFact]:
    stems, match = tsquery(query)
    finds, find_params = _phrase_sql(query_parts(query)[1])
    if match is not None:
        finds.append("f.terms @@ %(match)s::tsquery")
        find_params["match"] = match
    if not finds:
        return []
    where, params = fact_filter_sql(flt)
    count, count_params = fact_count_sql(flt)
    counts, stem_params = _counts(stems)
    rows = await db.fetch(
        # One statement: the candidates with their term counts (columns of the row the filter
        # reads anyway, schema migration 7; the content only of facts stored before it), and N
        # (computed once, an InitPlan, and only when there is a candidate).
        f"SELECT c.fact_id, c.term_count, {counts} AS counts, c.content, ({count}) AS n "
        "FROM (SELECT f.fact_id, f.ord, f.terms, f.term_count, f.term_repeats, "
        "CASE WHEN f.term_count IS NULL THEN f.content END AS content FROM facts AS f "
        f"WHERE ({' OR '.join(finds)}) AND {where} ORDER BY f.ord DESC LIMIT %(cap)s) "
        "AS c ORDER BY c.ord DESC",
        {**params, **count_params, **stem_params, **find_params, "cap": CANDIDATE_CAP},
    )
    if not rows:
        return []
    docs = {row["fact_id"]: _counted(row, stems) for row in rows}
    return await best_scored(db, bm25_of_counts(docs, int(rows[0]["n"])), limit)


def _counted(row: Row, stems: list[str]) -> tuple[int, list[int]]:
    """A candidate's length and query stem counts: its columns, or (a fact stored before schema
    migration 7) counted from its content."""
    if row["term_count"] is not None:
        return int(row["term_count"]), row["counts"]
    words = _stemmed(row["content"])
    return len(words), [words.count(s) for s in stems]
