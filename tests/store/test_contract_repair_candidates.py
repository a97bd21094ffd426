"""Contract: the sessions the start-up repair reads again (rules.repair_parted), found by one read
the database answers (LifecycleReads.parted_candidates): each session without people that a
session tombstone of one of its agents names, and none other. A session it missed would stay
without its user at every start; one it took wrongly is read again at every start for nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from memory.store import snapshots_lifecycle
from memory.store.base import MemoryStore
from memory.store.counts import Erasure
from memory.store.rules.repair_parted import PartedSession
from memory.store.snapshots_lifecycle import LifecycleReads
from tests.store.builders import at, msg, record
from tests.store.test_contract_forget_repair import _answered, _old_forget, _users, _views


async def _read_again(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions the repair reads again (snapshots_lifecycle.parted_session) at a start:
    each found, then once more in its repair's transaction."""
    read: list[str] = []
    decide = snapshots_lifecycle.parted_session

    async def spy(reads: LifecycleReads, sid: str, created: datetime) -> PartedSession | None:
        read.append(sid)
        return await decide(reads, sid, created)

    monkeypatch.setattr(snapshots_lifecycle, "parted_session", spy)
    return read


async def test_the_start_reads_again_each_parted_session_and_no_other(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sessions tombstoned by today's forget, their user still there: many, around the parted.
    for i in range(4):
        await _answered(store, f"kept{i}", f"k{i}")
        await store.forget_user(f"k{i}", agent_id="a2", at=at(100))
    # Two the old forget left without their user, sorted among those.
    await _answered(store, "kept1x", "u1")
    await _old_forget(store, monkeypatch, "u1", "a2", 100)
    await _answered(store, "kept2x", "u2")
    await _old_forget(store, monkeypatch, "u2", "a2", 100)
    # Another agent's tombstone there too, of one with no state in the session: not the
    # session's, it changes nothing (rp.session_keys).
    stray = [Erasure(agent_key="session:a3:kept2x", user_id="u9", epoch=1, forgotten_at=at(99))]
    # Agents talking alone, no tombstone: no one's to repair.
    await record(store, "alone", "a1", [msg("r1", "Anyone there?", role="agent", seconds=1)])
    await record(store, "alone", "a2", [msg("r2", "Not me.", role="agent", seconds=2)])
    # Agents alone, named only by the tombstone of an agent with no state in the session.
    await record(store, "elsewhere", "a1", [msg("r1", "Hello?", role="agent", seconds=1)])
    await record(store, "elsewhere", "a2", [msg("r2", "Hello.", role="agent", seconds=2)])
    stray.append(
        Erasure(agent_key="session:a3:elsewhere", user_id="u3", epoch=1, forgotten_at=at(100))
    )
    await store.import_erasures(stray)
    untouched = ["alone", "elsewhere", *(f"kept{i}" for i in range(4))]
    before = [await _views(store, s) for s in untouched]
    read = await _read_again(monkeypatch)

    await store.setup()

    assert sorted(set(read)) == ["kept1x", "kept2x"]
    assert [await _users(store, s) for s in ("kept1x", "kept2x")] == [("u1",), ("u2",)]
    assert [await _views(store, s) for s in untouched] == before
    read.clear()
    await store.setup()  # repaired, they have their user: found no more
    assert read == []
