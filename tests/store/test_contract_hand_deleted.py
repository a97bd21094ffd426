"""Contract: the facts a person deleted since a time, which a formation of statements said before
the delete reads so as not to bring them back in other words (memory/pipeline/deleted_again.py):
hand deletes only, of the owners asked, of that agent (every backend)."""

from __future__ import annotations

from memory.formation_commit import FactInvalidate
from memory.store.base import MemoryStore
from tests.store.builders import Former, add, at, unit


async def _ids(store: MemoryStore, since: float, *owners: str, agent: str = "a1") -> list[str]:
    return sorted(f.fact_id for f in await store.hand_deleted_since(agent, at(since), owners))


async def test_only_a_persons_deletes_since_the_time_of_the_owners_asked(
    store: MemoryStore,
) -> None:
    former = await Former(store).start()
    await former.form(add("mine", "Lives at 12 Rue de Rivoli", unit(1, 0)))
    await former.form(add("agents", "Answers in French", unit(0, 1), scope="agent"))
    await former.form(add("theirs", "Lives in Lyon", unit(1, 1), user_id="u2"))
    await former.form(add("kept", "Plays the cello", unit(0, 0, 1)))
    await former.form(
        add("newer", "Plays the viola", unit(0, 1, 1)),
        # A formation's delete: the fact it names replaced this one, which stands.
        FactInvalidate(fact_id="kept", expected_version=1, replaced_by="newer"),
    )
    other = await Former(store, session_id="s2", agent_id="a2").start(1)
    await other.form(add("elsewhere", "Lives at 12 Rue de Rivoli", unit(1, 0)))
    for fact_id in ("mine", "agents", "theirs"):
        await store.invalidate_fact(fact_id, at=at(500))
    await store.invalidate_fact("elsewhere", at=at(500))

    assert await _ids(store, 400, "u1") == ["mine"]
    assert await _ids(store, 400, "", "u1") == ["agents", "mine"]
    assert await _ids(store, 400, "", "u1", "u2") == ["agents", "mine", "theirs"]
    assert await _ids(store, 500, "u1") == ["mine"]  # at the time asked: since includes it
    assert await _ids(store, 501, "", "u1", "u2") == []
    assert await _ids(store, 400) == []
    assert await _ids(store, 400, "u1", agent="a2") == ["elsewhere"]
    [mine] = await store.hand_deleted_since("a1", at(400), ["u1"])
    assert mine.content == "Lives at 12 Rue de Rivoli" and mine.invalidated_at == at(500)
