"""Fact listings in both SQL backends: the caller's filter as SQL, the management listing and
count, the context FIFO's recent facts, and the ranking of text-search candidates. How the
candidates are found (FTS5, tsvector) is each backend's own."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from memory.models import Fact, FactFilter, ScoredFact
from memory.store.base_manage import Keyset
from memory.store.ranking import text_hits
from memory.store.rules.filters import scope_branches
from memory.store.rules.text import bm25_of_counts, bm25_of_terms
from memory.store.sql.db import Db
from memory.store.sql.reads import facts_by_id

# Recency as said (updated_at for facts without said_at; see MemoryStore.recent_facts): the
# expression of both schemas' facts_said index, which queries name to use it.
SAID_OR_UPDATED = "coalesce(f.said_at, f.updated_at)"


def fact_filter_sql(
    flt: FactFilter, alias: str = "f", *, valid_only: bool = True
) -> tuple[str, dict[str, object]]:
    """The WHERE terms (named parameters) of a FactFilter; valid facts only unless told."""
    scopes: list[str] = []
    params: dict[str, object] = {"flt_agent": flt.agent_id}
    for branch in scope_branches(flt):
        term = f"{alias}.scope = '{branch.scope}'"  # one of two literals: safe in the SQL text
        if branch.user_id is not None:
            term += f" AND {alias}.user_id = %(flt_user)s"
            params["flt_user"] = branch.user_id
        scopes.append(f"({term})")
    scope_sql = " OR ".join(scopes) or "false"
    validity = f" AND {alias}.invalidated_at IS NULL" if valid_only else ""
    return f"{alias}.agent_id = %(flt_agent)s{validity} AND ({scope_sql})", params


async def listed_facts(
    db: Db, flt: FactFilter, *, valid_only: bool, then: str, params: dict[str, object]
) -> list[Fact]:
    """Facts within the filter, with ``then`` SQL after the WHERE (more terms, the order, the
    page) and its named ``params``."""
    where, base = fact_filter_sql(flt, valid_only=valid_only)
    rows = await db.fetch(
        f"SELECT {db.fact_select} FROM facts AS f WHERE {where} {then}", {**base, **params}
    )
    return [db.fact(row) for row in rows]


async def list_facts(
    db: Db, flt: FactFilter, *, valid_only: bool, offset: int, limit: int, keyset: Keyset | None
) -> list[Fact]:
    """Newest (updated, then fact_id) first; the keyset's side of its key (MemoryStore.list_facts)."""
    order, then = "DESC", ""
    params: dict[str, object] = {"limit": limit, "offset": offset}
    if keyset is not None:
        order, side = ("ASC", ">") if keyset.newer else ("DESC", "<")
        at, fact_id = keyset.key
        # The bound alone first: an index range for the planner (PostgreSQL scanned from the
        # top without it, O(position) as an offset); the OR then breaks the ties.
        then = (
            f"AND f.updated_at {side}= %(at)s "
            f"AND (f.updated_at {side} %(at)s OR (f.updated_at = %(at)s AND f.fact_id {side} %(id)s)) "
        )
        params |= {"at": db.time(at), "id": fact_id}
    listed = await listed_facts(
        db, flt, valid_only=valid_only,
        then=f"{then}ORDER BY f.updated_at {order}, f.fact_id {order} "
        "LIMIT %(limit)s OFFSET %(offset)s",
        params=params,
    )  # fmt: skip
    return listed[::-1] if order == "ASC" else listed


async def recent_facts(db: Db, flt: FactFilter, since: datetime, limit: int) -> list[Fact]:
    """Valid facts said (else updated) at or after ``since``, the most recent first."""
    return await listed_facts(
        db, flt, valid_only=True,
        then=f"AND {SAID_OR_UPDATED} >= %(since)s "
        f"ORDER BY {SAID_OR_UPDATED} DESC, f.{db.ord} DESC LIMIT %(limit)s",
        params={"since": db.time(since), "limit": limit},
    )  # fmt: skip


async def count_facts(db: Db, flt: FactFilter) -> int:
    where, params = fact_filter_sql(flt)
    row = await db.fetch_one(f"SELECT count(*) AS n FROM facts AS f WHERE {where}", params)
    return 0 if row is None else int(row["n"])


async def ranked_text_hits(
    db: Db, words: Sequence[str], docs: Mapping[str, Sequence[str]], n_docs: int, limit: int
) -> list[ScoredFact]:
    """The hits of the candidates (id -> stemmed terms, newest first) by the shared BM25 with
    the filter's ``n_docs`` (``best_scored``)."""
    return await best_scored(db, bm25_of_terms(words, docs, n_docs), limit)


async def ranked_counted_hits(
    db: Db, docs: Mapping[str, tuple[int, Sequence[int]]], n_docs: int, limit: int
) -> list[ScoredFact]:
    """``ranked_text_hits`` of candidates given by their term counts (``bm25_of_counts``)."""
    return await best_scored(db, bm25_of_counts(docs, n_docs), limit)


async def best_scored(db: Db, scores: Mapping[str, float], limit: int) -> list[ScoredFact]:
    """The hits (ranking.text_hits) of the candidates' ``scores`` (newest first), with their
    facts."""
    ranked = text_hits(scores.items(), limit)
    facts = {fact.fact_id: fact for fact in await facts_by_id(db, [f for f, _ in ranked])}
    return [ScoredFact(fact=facts[f], score=s) for f, s in ranked if f in facts]
