"""Search helpers of the SQLite backend: text search (FTS5 finds, the shared BM25 scores over the
caller's facts) and the vector cache.

The vector cache keeps, per agent, the unit vectors of its valid facts in one float32 matrix so a
query is one matrix-vector product instead of reading every BLOB from SQLite, and each valid
fact's text terms (its Porter stems), so a text search scores its matches without reading or
stemming their contents again (~10 µs a match: most of a search at 100k facts). It is refreshed
incrementally: every fact write bumps the agent's counter in scope_versions and stamps the rows it
wrote with the new value (facts.change_seq), so a cache that saw counter n reads only the rows with
change_seq > n — including writes made by another process on the same file.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import numpy.typing as npt

from memory.models import FactFilter, ScoredFact
from memory.store.base import Vector
from memory.store.rules.text import (
    CANDIDATE_CAP,
    bm25_of_terms,
    query_parts,
    query_terms,
    stemmed_tokens,
)
from memory.store.sql.facts import best_scored, fact_filter_sql
from memory.store.sqlite.db import SQLiteDb
from memory.store.sqlite.schema import fact_counter_key, facts_purge_key

# User codes of matrix rows besides the users' own (>= 0): agent-scoped facts, and dead rows.
_AGENT_SCOPE = -1
_DEAD = -2
_BATCH = 4096
# An agent's fact rows as _AgentMatrix.apply reads them, with a condition after the AND.
_ROWS = (
    "SELECT fact_id, user_id, scope, embedding, invalidated_at, content FROM facts "
    "WHERE agent_id = ? AND "
)


def fts_match_expression(terms: list[str], phrases: list[tuple[str, ...]]) -> str | None:
    """The query's words and phrases (``query_parts``: folded as the index's text is,
    facts.search_text), each quoted as an FTS5 string (a phrase's words in one: FTS5 matches
    them next to each other) and OR-ed: user text never becomes FTS5 syntax (operators,
    prefixes, columns, NEAR). None when the query has no word."""
    # Quoting is safe because a \\w+ word never holds a double quote.
    quoted = [*terms, *(" ".join(phrase) for phrase in phrases)]
    return " OR ".join(f'"{text}"' for text in quoted) or None


async def text_search_tx(
    db: SQLiteDb, query: str, flt: FactFilter, limit: int, index: VectorCache
) -> list[ScoredFact]:
    """FTS5 finds the matches within the filter; the scores are the shared BM25
    (memory.store.rules.text) with the statistics of the facts within the filter, never FTS5's
    bm25(), whose statistics are the whole table's: other agents' facts must not move a score.
    The matches' terms and the count of the caller's facts come from the agent's in-memory
    index, refreshed in this same read transaction; whole rows are read for the ``limit`` best."""
    match = fts_match_expression(*query_parts(query))
    if match is None:
        return []
    where, params = fact_filter_sql(flt)
    matched = [
        str(row["fact_id"])
        for row in await db.fetch(
            "SELECT f.fact_id FROM facts_fts JOIN facts AS f ON f.rowid = facts_fts.rowid "
            f"WHERE facts_fts MATCH %(match)s AND {where} "
            "ORDER BY facts_fts.rowid DESC LIMIT %(cap)s",  # newest first: FTS5's own order
            {**params, "match": match, "cap": CANDIDATE_CAP},
        )
    ]
    if not matched:
        return []
    agent = index.fresh(db.conn, flt.agent_id)
    docs = {fid: agent.terms[fid] for fid in matched if fid in agent.terms}
    return await best_scored(db, bm25_of_terms(query_terms(query), docs, agent.count(flt)), limit)


def _unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)


class _AgentMatrix:
    """One agent's valid facts: unit vectors in the first ``size`` rows of a buffer that grows by
    doubling, so that a refresh costs what changed, not the whole matrix. A replaced or
    invalidated fact's row is only marked dead (it never matches a filter) until dead rows are
    the majority and the buffer is compacted."""

    def __init__(self, expected_rows: int = 0) -> None:
        self.expected_rows = expected_rows  # allocated at once by a full load: no regrowth
        self.seen = 0  # the agent's fact counter this matrix reflects
        self.purges = 0  # the agent's hard-delete counter (forget_user) it reflects
        self.size = 0
        self.dead = 0
        self.ids: list[str | None] = []  # row -> fact id (None: dead row)
        self.rows: dict[str, int] = {}  # fact id -> row
        self.user_codes: dict[str, int] = {}
        self.users = np.empty(0, dtype=np.int32)  # row -> user code, _AGENT_SCOPE or _DEAD
        self.matrix = np.empty((0, 0), dtype=np.float32)
        self.terms: dict[str, tuple[str, ...]] = {}  # valid fact id -> its text terms

    def apply(self, rows: list[sqlite3.Row]) -> None:
        """Replace the changed facts: drop their old rows, append the valid ones."""
        for row in rows:
            old = self.rows.pop(row["fact_id"], None)
            self.terms.pop(row["fact_id"], None)
            if old is not None:
                self.ids[old] = None
                self.users[old] = _DEAD
                self.dead += 1
        valid = [row for row in rows if row["invalidated_at"] is None]
        for row in valid:
            self.terms[row["fact_id"]] = tuple(stemmed_tokens(row["content"]))
        if valid:
            blob = b"".join(row["embedding"] for row in valid)
            vectors = np.frombuffer(blob, dtype=np.float32).reshape(len(valid), -1)
            if self.size and vectors.shape[1] != self.matrix.shape[1]:
                self._clear()  # a re-embed switched models: every row of the agent changed
            codes = [self._code(row["user_id"], row["scope"]) for row in valid]
            self._append([row["fact_id"] for row in valid], codes, _unit_rows(vectors))
        if self.dead > 1024 and self.dead * 2 > self.size:
            self._compact()

    def _append(self, ids: list[str], codes: list[int], vectors: npt.NDArray[np.float32]) -> None:
        end = self.size + len(ids)
        if end > len(self.users) or self.matrix.shape[1] != vectors.shape[1]:
            capacity = max(end, 2 * len(self.users), 1024, self.expected_rows)
            matrix = np.empty((capacity, vectors.shape[1]), dtype=np.float32)
            if self.size:
                matrix[: self.size] = self.matrix[: self.size]
            users = np.full(capacity, _DEAD, dtype=np.int32)
            users[: self.size] = self.users[: self.size]
            self.matrix, self.users = matrix, users
        self.matrix[self.size : end] = vectors
        self.users[self.size : end] = codes
        for offset, fact_id in enumerate(ids):
            self.rows[fact_id] = self.size + offset
        self.ids.extend(ids)
        self.size = end

    def _clear(self) -> None:
        """Drop the vectors (a re-embed switched models); the terms of the valid facts stay."""
        self.size = self.dead = 0
        self.ids, self.rows = [], {}
        self.users = np.empty(0, dtype=np.int32)
        self.matrix = np.empty((0, 0), dtype=np.float32)

    def _compact(self) -> None:
        alive = np.flatnonzero(self.users[: self.size] != _DEAD)
        self.matrix = self.matrix[alive]
        self.users = self.users[alive]
        self.ids = [self.ids[i] for i in alive]
        self.rows = {fact_id: i for i, fact_id in enumerate(self.ids) if fact_id is not None}
        self.size = len(self.ids)
        self.dead = 0

    def _code(self, user_id: str | None, scope: str) -> int:
        if scope == "agent" or user_id is None:
            return _AGENT_SCOPE
        return self.user_codes.setdefault(user_id, len(self.user_codes))

    def _selected(self, flt: FactFilter) -> npt.NDArray[np.bool_]:
        users = self.users[: self.size]
        selected = np.zeros(self.size, dtype=bool)
        if flt.include_agent_scope:
            selected |= users == _AGENT_SCOPE
        if flt.user_id is not None and flt.user_id in self.user_codes:
            selected |= users == self.user_codes[flt.user_id]
        return selected

    def count(self, flt: FactFilter) -> int:
        return int(np.count_nonzero(self._selected(flt)))

    def search(
        self, query: Vector, flt: FactFilter, limit: int, min_score: float
    ) -> list[tuple[str, float]]:
        """(fact_id, cosine) best first; ``query`` is a unit vector."""
        rows = np.flatnonzero(self._selected(flt))
        if rows.size == 0 or limit <= 0:
            return []
        # A product over all rows beats copying most of the matrix; a small selection is copied.
        if rows.size == self.size:
            scores = self.matrix[: self.size] @ query
        elif rows.size * 4 < self.size:
            scores = self.matrix[rows] @ query
        else:
            scores = (self.matrix[: self.size] @ query)[rows]
        np.clip(scores, -1.0, 1.0, out=scores)
        keep = np.flatnonzero(scores >= min_score) if min_score > -1 else np.arange(rows.size)
        if keep.size > limit:
            keep = keep[np.argpartition(-scores[keep], limit - 1)[:limit]]
        best = keep[np.argsort(-scores[keep], kind="stable")]
        return [(str(self.ids[rows[i]]), float(scores[i])) for i in best]


class VectorCache:
    """Per-agent matrices of fact vectors, and each fact's terms. Used only from the store's
    worker thread."""

    def __init__(self) -> None:
        self._agents: dict[str, _AgentMatrix] = {}

    def search(
        self,
        conn: sqlite3.Connection,
        query: Vector,
        flt: FactFilter,
        *,
        limit: int,
        min_score: float,
    ) -> list[tuple[str, float]]:
        """(fact_id, cosine) best first. Call inside a read transaction, so that the counter and
        the rows it reads (and the facts the caller then loads) are one snapshot."""
        norm = float(np.linalg.norm(query))
        unit = (query / norm if norm > 0 else query).astype(np.float32, copy=False)
        return self.fresh(conn, flt.agent_id).search(unit, flt, limit, min_score)

    def fresh(self, conn: sqlite3.Connection, agent_id: str) -> _AgentMatrix:
        """The agent's index as of this read transaction (call inside it)."""
        counter = _version(conn, fact_counter_key(agent_id))
        purges = _version(conn, facts_purge_key(agent_id))
        agent = self._agents.get(agent_id)
        if agent is None or agent.seen > counter or agent.purges != purges:
            # First use, or a database that went back in time (replaced file): load everything.
            count = conn.execute(
                "SELECT count(*) FROM facts WHERE agent_id = ? AND invalidated_at IS NULL",
                (agent_id,),
            ).fetchone()[0]
            agent = self._agents[agent_id] = _AgentMatrix(expected_rows=count)
            agent.purges = purges
            changes = conn.execute(_ROWS + "invalidated_at IS NULL", (agent_id,))
        elif agent.seen == counter:
            return agent
        else:
            changes = conn.execute(_ROWS + "change_seq > ?", (agent_id, agent.seen))
        while batch := changes.fetchmany(_BATCH):
            agent.apply(batch)
        agent.seen = counter
        return agent


def _version(conn: sqlite3.Connection, key: str) -> int:
    """A change counter's value (0 before its first bump)."""
    row = conn.execute("SELECT version FROM scope_versions WHERE key = ?", (key,)).fetchone()
    return 0 if row is None else int(row["version"])
