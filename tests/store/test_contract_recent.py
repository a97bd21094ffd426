"""Contract: the context FIFO (recent_facts) selects facts by when they were said, on every
backend; facts without said_at fall back to when they were stored."""

from __future__ import annotations

from memory.formation_commit import FactAdd, FactInvalidate, FactUpdate
from memory.store.base import MemoryStore
from tests.store.builders import Former, add, at, unit, user_filter

DAY = 86_400.0


def said(
    fact_id: str, seconds: float, *, scope: str = "user", user_id: str | None = "u1"
) -> FactAdd:
    """A fact said at T0 + seconds (formations store it at T0 + 100 s and later)."""
    op = add(fact_id, f"Fact {fact_id}", unit(1, len(fact_id)), scope=scope, user_id=user_id)
    return op.model_copy(update={"said_at": at(seconds)})


async def _ids(
    store: MemoryStore,
    since: float,
    limit: int = 10,
    *,
    agent_id: str = "a1",
    user_id: str | None = "u1",
    agent_scope: bool = True,
) -> list[str]:
    flt = user_filter(agent_id, user_id, agent_scope)
    return [f.fact_id for f in await store.recent_facts(flt, since=at(since), limit=limit)]


async def test_a_fact_stored_recently_but_said_long_ago_is_not_recent(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(said("yesterday", 100 - DAY))
    await former.form(said("backlog", -400 * DAY))  # an import: stored last, said a year ago
    # Updated now, with no newer saying: still said when it was first said.
    await former.form(
        FactUpdate(
            fact_id="yesterday", expected_version=1, content="Fact yesterday, reworded",
            embedding=unit(1, 9), reason="reworded",
        )
    )  # fmt: skip

    assert await _ids(store, since=-7 * DAY) == ["yesterday"]
    # Over a longer window both are recent, most recently said first (not last stored first).
    assert await _ids(store, since=-500 * DAY) == ["yesterday", "backlog"]
    assert await _ids(store, since=-500 * DAY, limit=1) == ["yesterday"]


async def test_a_fact_without_said_at_counts_from_when_it_was_stored(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(add("older-store", "Fact without provenance", unit(0, 1)))  # stored at 100
    await former.form(said("said-50", 50), said("said-105", 105))  # stored at 110

    assert await _ids(store, since=0) == ["said-105", "older-store", "said-50"]
    assert await _ids(store, since=101) == ["said-105"]
    assert await _ids(store, since=100) == ["said-105", "older-store"]


async def test_facts_said_at_the_same_instant_list_the_later_stored_first(
    store: MemoryStore,
) -> None:
    former = await Former(store).start()
    await former.form(said("first", 30), said("second", 30))
    await former.form(said("third", 30), said("earlier", 20))

    assert await _ids(store, since=0) == ["third", "second", "first", "earlier"]
    assert await _ids(store, since=30, limit=2) == ["third", "second"]


async def test_recent_facts_keep_to_the_filter(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(
        said("mine", 10),
        said("agents", 20, scope="agent"),
        said("u2s", 30, user_id="u2"),
        said("replaced", 40),
    )
    await former.form(
        said("replacement", 45),  # said after what it replaces (else it would not)
        FactInvalidate(fact_id="replaced", expected_version=1, replaced_by="replacement"),
    )
    other = await Former(store, "s-a2", "a2").start()
    await other.form(said("a2s", 50), said("a2-agent", 60, scope="agent"))

    assert await _ids(store, since=0) == ["replacement", "agents", "mine"]
    assert await _ids(store, since=0, agent_scope=False) == ["replacement", "mine"]
    assert await _ids(store, since=0, user_id="u2") == ["u2s", "agents"]
    assert await _ids(store, since=0, user_id=None) == ["agents"]
    assert await _ids(store, since=0, agent_id="a2") == ["a2-agent", "a2s"]
    assert await _ids(store, since=0, limit=0) == []
