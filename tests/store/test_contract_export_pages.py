"""Contract: an export's facts read a page at a time (store.export_fact_ids, then
store.export_facts of a page of those ids: what `mnemos export` and the HTTP user export write)
are those of export_data, in its order, with their vectors; a fact edited or invalidated before
its page is read is read as it is then, one deleted is left out (every backend)."""

from __future__ import annotations

from memory.store.base import MemoryStore
from memory.store.rules.export import Exported
from tests.store.builders import MODEL, Former, add, at, msg, record, unit, vec


async def _paged(
    store: MemoryStore, *, agent_id: str | None, user_id: str | None, size: int
) -> list[Exported]:
    ids = await store.export_fact_ids(agent_id=agent_id, user_id=user_id)
    facts: list[Exported] = []
    for start in range(0, len(ids), size):
        facts += await store.export_facts(ids[start : start + size])
    return facts


async def test_pages_of_an_export_hold_the_facts_of_export_data_in_its_order(
    store: MemoryStore,
) -> None:
    a1 = await Former(store).start(messages=8)
    a2 = await Former(store, session_id="s2", agent_id="a2").start()
    await a1.form(*[add(f"f{n}", f"Fact {n} of u1", unit(1, n / 10)) for n in range(3)])
    await a2.form(add("g0", "Fact of u1 for a2", unit(0, 1)))
    await a1.form(add("h0", "Fact of u2", unit(0, 0, 1), user_id="u2"))
    await a1.form(add("k0", "An agent fact", unit(1, 1), scope="agent"))
    await a1.form(*[add(f"f{n}", f"Fact {n} of u1", unit(1, n / 10)) for n in range(3, 5)])

    for agent_id, user_id in (("a1", "u1"), ("a1", None), (None, "u1"), (None, None)):
        whole = await store.export_data(agent_id=agent_id, user_id=user_id, messages=False)
        assert whole.facts, (agent_id, user_id)
        paged = await _paged(store, agent_id=agent_id, user_id=user_id, size=2)
        assert paged == whole.facts, (agent_id, user_id)
    mine = await store.export_fact_ids(agent_id="a1", user_id="u1")
    assert mine == ["f0", "f1", "f2", "f3", "f4"]
    # The ids' order is the page's, whatever order they are asked in.
    assert [f.fact_id for f, _ in await store.export_facts(["f3", "f0", "f4"])] == [
        "f3",
        "f0",
        "f4",
    ]
    without = await store.export_data(agent_id="a1", user_id="u1", messages=False, facts=False)
    assert without.facts == []
    assert await store.export_facts([]) == []


async def test_a_page_reads_its_facts_as_they_are_when_it_is_read(store: MemoryStore) -> None:
    """The ids are read first; then f3 is edited, f4 invalidated, f6 formed, and u2's facts
    deleted (forget_user). The pages read after hold f3 as edited and f4 as invalidated, leave
    u2's deleted fact out, and not f6 (formed after the ids were read): each fact once."""
    former = await Former(store).start(messages=10)
    await record(store, "s2", "a1", [msg("m1", "hi", user_id="u2")])
    for n in range(6):
        await former.form(add(f"f{n}", f"Fact {n}", unit(0, 1, n / 10)))
    await former.form(add("h0", "Fact of u2", unit(1, 0, 0), user_id="u2"))
    ids = await store.export_fact_ids(agent_id="a1", user_id=None)
    assert ids == ["f0", "f1", "f2", "f3", "f4", "f5", "h0"]
    first = await store.export_facts(ids[:2])

    await store.edit_fact(
        "f3", content="Fact 3, corrected", embedding=vec(1, 1), embedding_model=MODEL, at=at(900)
    )
    await store.invalidate_fact("f4", at=at(900))
    await store.forget_user("u2", agent_id="a1", at=at(950))
    await former.form(add("f6", "Fact 6", unit(1, 0, 1)))

    rest = await store.export_facts(ids[2:4]) + await store.export_facts(ids[4:])
    assert [f.fact_id for f, _ in first + rest] == ["f0", "f1", "f2", "f3", "f4", "f5"]
    by_id = {f.fact_id: f for f, _ in rest}
    assert by_id["f3"].content == "Fact 3, corrected"
    assert by_id["f4"].invalidated_at is not None
