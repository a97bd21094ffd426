"""SQLite: the reads a formation commit makes of the agent's facts inside its write transaction
(BEGIN IMMEDIATE: every other writer waits) range an index each, whatever the agent holds: the
re-check's facts inserted or updated since its candidates were read, and the facts a person
deleted since its earliest add was said. Told by SQLite's own plan of the statements run."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing
from pathlib import Path
from unittest.mock import patch

from memory.formation_commit import AddRecheck
from memory.store.sqlite import SQLiteStore
from memory.store.sqlite import db as sqlite_db
from tests.store.builders import Former, add, at, unit

# The statements that read facts by time: the re-check's and the hand deletes'.
_BY_TIME = ("inserted_at >=", "updated_at >=", "invalidated_at >=")


async def _statements_of_a_rechecked_commit(path: Path) -> list[tuple[str, tuple[object, ...]]]:
    """The facts statements by time (with their parameters) of a commit whose add, said before a
    person deleted another fact, carries a re-check."""
    store = SQLiteStore(path)
    await store.setup()
    try:
        former = await Former(store).start()
        await former.form(add("f1", "Likes tea", unit(1, 0)).model_copy(update={"said_at": at(10)}))
        await store.invalidate_fact("f1", at=at(105), reason="user asked to delete it")
        late = add("f2", "Likes jazz", unit(0, 1)).model_copy(update={"said_at": at(60)})
        recheck = AddRecheck(candidates_read_at=at(106), similarity=0.9)
        commit = former.next_commit(late).model_copy(update={"recheck": recheck})
        run: list[tuple[str, tuple[object, ...]]] = []
        in_lists = sqlite_db._in_lists

        def recorded(
            sql: str, values: Sequence[object], first: tuple[object, ...], then: str = ""
        ) -> Iterator[tuple[str, tuple[object, ...]]]:
            for statement, params in in_lists(sql, values, first, then):
                run.append((statement, params))
                yield statement, params

        with patch.object(sqlite_db, "_in_lists", recorded):
            result = await store.commit_formation(commit)
        assert result.facts_added == 1
    finally:
        await store.close()
    return [(s, p) for s, p in run if "FROM facts" in s and any(t in s for t in _BY_TIME)]


def _plan(path: Path, statement: str, params: tuple[object, ...]) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement, params)]


async def test_a_commits_reads_of_facts_by_time_range_their_indexes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    statements = await _statements_of_a_rechecked_commit(path)
    plans = {statement: _plan(path, statement, params) for statement, params in statements}

    used = {
        index
        for plan in plans.values()
        for step in plan
        for index in ("facts_inserted", "facts_recent", "facts_hand_deleted")
        if f"USING INDEX {index} (agent_id=? AND" in step
    }
    assert used == {"facts_inserted", "facts_recent", "facts_hand_deleted"}, plans
    # Each statement ranges one of them: none searches the owner's facts by another index (the
    # dedup key's facts_hash reads every valid fact of the owner) or scans the table.
    for statement, plan in plans.items():
        assert len(plan) == 1 and "(agent_id=? AND" in plan[0], (statement, plan)
        assert not any("facts_hash" in step or step.startswith("SCAN") for step in plan), plan
