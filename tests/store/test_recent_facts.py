"""The commit re-check's matrix of recent facts (memory/store/rules/recheck.py): one product per
add finds the same facts a loop over them would, whatever their lengths and dimensions."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from memory.models import Fact
from memory.store.rules.recheck import RecentFacts

AT = datetime(2026, 3, 1, tzinfo=UTC)


def _fact(n: int) -> Fact:
    return Fact(
        fact_id=f"f{n}", agent_id="a", user_id="u", scope="user", content=f"fact {n}",
        hash=f"h{n}", embedding_model="m", formed_at=AT, updated_at=AT,
    )  # fmt: skip


def test_the_matrix_finds_what_a_loop_finds() -> None:
    rng = np.random.default_rng(7)
    vectors = [list(rng.normal(size=8) * rng.uniform(0.5, 3)) for _ in range(200)]
    recent = RecentFacts([(_fact(n), v) for n, v in enumerate(vectors)])
    query = list(rng.normal(size=8))
    unit = np.asarray(query) / np.linalg.norm(query)
    looped = {
        f"f{n}"
        for n, v in enumerate(vectors)
        if float(unit @ (np.asarray(v) / np.linalg.norm(v))) >= 0.5
    }
    found = {fact.fact_id for fact, _ in recent.similar(query, 0.5)}
    assert found == looped and found  # some, not all
    assert len(found) < len(vectors)


def test_vectors_of_another_dimension_and_zero_vectors_are_never_similar() -> None:
    recent = RecentFacts(
        [(_fact(1), [1.0, 0.0]), (_fact(2), [0.0, 0.0, 0.0]), (_fact(3), [1.0, 0.0, 0.0])]
    )
    assert [f.fact_id for f, _ in recent.similar([2.0, 0.0, 0.0], 0.9)] == ["f3"]
    assert RecentFacts([]).similar([1.0, 0.0], 0.0) == [] and not RecentFacts([])
