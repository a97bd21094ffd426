"""Convergence of concurrent formations, checked at commit (part of ``plan_formation``).

Two sessions of one agent that learn the same new fact at once each read their dedup candidates
before the other committed: both decide ADD, and the agent ends with two valid copies. So a commit
re-checks its adds against the facts committed since its candidates were read: an add as similar
to one of them as a dedup candidate would have been (cosine, the candidates' threshold) makes the
decision stale, and the workflow decides again against fresh candidates, which now hold that fact.

A fact committed since ``recent_since`` is one the store inserted since (its insertion stamp, the
writer's clock at the insert, whatever the fact's own times say: an imported fact keeps its
source's updated_at, often months old) or one updated since (updated_at: every change of a stored
fact stamps the time of its commit). The stores' ``valid_since`` read exactly these. Rows stored
before the stamp existed have none: updated_at alone, as before. A process of the previous
version, still writing during a rolling upgrade, inserts without the stamp: its insert is stamped
by the store itself (SQLite: a trigger; PostgreSQL: the column's default; MongoDB's insertion
ObjectId is the stamp, and every version writes one).

Reflections converge the simpler way: a text already in its scope key's memory is not buffered
again: one buffered or set aside, or absorbed into the key's current blob. One absorbed into an
older blob is not: a later consolidation moved the memory on (a preference changed since), so the
same words said again are news ("French" again after "English") and are buffered.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta

import numpy as np

from memory.errors import StaleDecisionError
from memory.formation_commit import AddRecheck, FactAdd
from memory.models import SET_ASIDE, Fact, Reflection

# Facts stamped this long before the candidates were read are read too: a commit (an insert)
# stamps its time before its transaction commits, so one that was still writing when the
# candidates were read carries an earlier time; the margin also covers the writers' clocks. Facts the decision saw (at that version) are not counted, so the margin never
# makes a decision stale by itself.
CLOCK_MARGIN = timedelta(seconds=60)
_TIE = 1e-5


def recent_since(recheck: AddRecheck | None) -> datetime | None:
    """From when a commit's snapshot reads the agent's changed facts (None: not at all)."""
    return None if recheck is None else recheck.candidates_read_at - CLOCK_MARGIN


class RecentFacts:
    """The facts committed since the candidates were read, as one matrix of unit vectors: a
    commit re-checks each of its adds with one product, not a loop over the recent facts (in a
    fast backlog drain every fact of the last minute is recent: 40 adds × hundreds of facts)."""

    def __init__(self, recent: Sequence[tuple[Fact, Sequence[float]]]) -> None:
        self.facts = [fact for fact, _ in recent]
        self._vectors = [vector for _, vector in recent]
        self._by_dimension: dict[int, tuple[list[int], np.ndarray]] = {}

    def __bool__(self) -> bool:
        return bool(self.facts)

    def _matrix(self, dimension: int) -> tuple[list[int], np.ndarray]:
        """The rows (indexes into ``facts``) of this dimension and their unit vectors, built once."""
        if dimension not in self._by_dimension:
            rows = [i for i, v in enumerate(self._vectors) if len(v) == dimension]
            m = np.asarray([self._vectors[i] for i in rows], dtype=np.float32).reshape(
                len(rows), dimension
            )
            norms = np.linalg.norm(m, axis=1, keepdims=True)
            self._by_dimension[dimension] = rows, m / np.where(norms == 0, 1, norms)
        return self._by_dimension[dimension]

    def similar(self, vector: Sequence[float], at_least: float) -> list[tuple[Fact, float]]:
        """The recent facts at least ``at_least`` cosine-similar to ``vector``."""
        mine = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(mine))
        rows, m = self._matrix(len(mine))
        if not rows:
            return []
        sims = m @ (mine / norm if norm else mine)
        return [(self.facts[rows[i]], float(sims[i])) for i in np.flatnonzero(sims >= at_least)]


def check_add(op: FactAdd, recheck: AddRecheck | None, recent: RecentFacts) -> None:
    """Raise StaleDecisionError when a fact committed since the candidates were read, unseen by
    the decision, would have been a candidate of this add: similar enough, and more similar than
    the last candidate of a full list."""
    if recheck is None or not recent:
        return
    floor = recheck.floors.get(op.fact_id)
    for fact, similarity in recent.similar(op.embedding, recheck.similarity):
        if (
            fact.invalidated_at is not None
            or fact.scope != op.scope
            or (fact.user_id or "") != (op.user_id or "")
            or recheck.seen.get(fact.fact_id) == fact.version
        ):
            continue
        # A tie with the last candidate shown is no more similar (float32 scores differ by ~1e-7).
        if floor is None or similarity > floor + _TIE:
            raise StaleDecisionError(
                f"fact {fact.fact_id} (v{fact.version}) was committed since the candidates were "
                f"read and is {similarity:.2f} similar to a new fact: decide again"
            )


def reflection_text_key(scope_key: str, content: str) -> tuple[str, str]:
    return scope_key, " ".join(content.split())


def in_memory(
    stored: Collection[tuple[str, str, int | None]], blob_versions: Mapping[str, int]
) -> frozenset[tuple[str, str]]:
    """The stored texts (scope key, normalised content, absorbed_into_version) a new reflection of
    the same text repeats: buffered, set aside, or absorbed into the key's current blob version.
    A text absorbed into an older version was moved on from by a later consolidation."""
    return frozenset(
        (key, text)
        for key, text, absorbed in stored
        if absorbed in (None, SET_ASIDE) or absorbed == blob_versions.get(key, 0)
    )


def unseen_reflections(
    reflections: Sequence[Reflection], stored: Collection[tuple[str, str]]
) -> list[Reflection]:
    """The reflections whose text is neither in ``stored`` (``in_memory``) nor repeated before
    them."""
    seen = set(stored)
    kept: list[Reflection] = []
    for r in reflections:
        key = reflection_text_key(r.scope_key.key, r.content)
        if key not in seen:
            seen.add(key)
            kept.append(r)
    return kept
