"""Facts in both SQL backends: the caller's filter as SQL, the facts within it, and the ranking of
text-search candidates. How the candidates are found (FTS5, tsvector) is each backend's own."""

from __future__ import annotations

from collections.abc import Mapping

from memory.models import Fact, FactFilter, ScoredFact
from memory.store.ranking import text_hits
from memory.store.rules.filters import scope_branches
from memory.store.sql.db import Db
from memory.store.sql.reads import SqlReads

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


async def best_scored(db: Db, scores: Mapping[str, float], limit: int) -> list[ScoredFact]:
    """The hits (ranking.text_hits) of the candidates' ``scores`` (newest first: the shared BM25,
    rules.text), with their facts."""
    ranked = text_hits(scores.items(), limit)
    read = await SqlReads(db).facts_by_id([f for f, _ in ranked])
    facts = {fact.fact_id: fact for fact in read}
    return [ScoredFact(fact=facts[f], score=s) for f, s in ranked if f in facts]
