"""Contract: a fact stated again after it was said counts as said at its latest statement (every
backend; memory/store/rules/fact_ops.py, FactKeep).

Alice said she lives in Berlin on day 10 (m1); the formation of a later message restated it on day
50 (a NONE: a keep). A conversation of day 30 that says she lives in Paris, recorded late, is
formed afterwards: day 50 is the later word, so Berlin stays and Paris is kept in its history. A
keep writes no new version (its text is unchanged); an older keep, or one said at the fact's own
time, moves nothing."""

from __future__ import annotations

from memory.formation_commit import FactAdd, FactKeep, FactUpdate
from memory.models import Fact
from memory.store.base import MemoryStore
from memory.store.rules.versions import CITED_BEFORE
from tests.store.builders import MODEL, Former, add, at, unit, vec

DAY = 86400.0
BERLIN, PARIS = "Alice lives in Berlin", "Alice lives in Paris"


def said(day: float, *messages: str) -> dict[str, object]:
    return {"source_message_ids": messages, "said_at": at(day * DAY)}


def berlin(day: float, message: str) -> FactAdd:
    return add("f1", BERLIN, unit(1, 0)).model_copy(update=said(day, message))


def keep(day: float, message: str, version: int = 1) -> FactKeep:
    return FactKeep(fact_id="f1", expected_version=version, **said(day, message))


async def _restated(store: MemoryStore) -> tuple[Former, Fact]:
    former = await Former(store).start()
    await former.form(berlin(10, "m1"))
    result = await former.form(keep(50, "m2"))
    assert (result.facts_added, result.facts_updated, result.facts_duplicate) == (0, 0, 0)
    [fact] = await store.get_facts(["f1"])
    return former, fact


async def test_a_later_restatement_dates_the_fact_and_cites_its_message(store: MemoryStore) -> None:
    _, fact = await _restated(store)

    assert (fact.content, fact.version, fact.history) == (BERLIN, 1, ())
    assert (fact.said_at, fact.source_message_ids) == (at(50 * DAY), ("m2", "m1"))


async def test_a_statement_learnt_late_does_not_replace_the_later_restatement(
    store: MemoryStore,
) -> None:
    former, _ = await _restated(store)
    paris = FactUpdate(
        fact_id="f1", expected_version=1, content=PARIS, embedding=unit(0, 1), **said(30, "m3")
    )

    await former.form(paris)

    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.said_at) == (BERLIN, at(50 * DAY))
    assert [(r.content, r.said_at) for r in fact.history] == [(PARIS, at(30 * DAY))]


async def test_an_older_or_simultaneous_restatement_moves_nothing(store: MemoryStore) -> None:
    former, fact = await _restated(store)

    await former.form(keep(20, "m3"))
    await former.form(keep(50, "m4"))

    assert await store.get_facts(["f1"]) == [fact]


async def test_a_retried_commit_of_a_restatement_writes_the_same(store: MemoryStore) -> None:
    former = await Former(store).start()
    await former.form(berlin(10, "m1"))
    restated = former.next_commit(keep(50, "m2"))

    first = await store.commit_formation(restated)
    [fact] = await store.get_facts(["f1"])
    again = await store.commit_formation(restated)

    assert again.already_committed and not first.already_committed
    assert await store.get_facts(["f1"]) == [fact]


async def test_a_restatement_of_a_persons_edit_leaves_it_as_they_left_it(
    store: MemoryStore,
) -> None:
    """Its sources tell the edit (versions.edited_by_hand): cited anew, it would no longer stand
    against what was said before it."""
    former = await Former(store).start()
    await former.form(berlin(10, "m1"))
    edited = await store.edit_fact(
        "f1", content="Alice lives in Munich", embedding=vec(0, 0, 1), embedding_model=MODEL,
        at=at(20 * DAY), reason="moved",
    )  # fmt: skip

    await former.form(keep(50, "m2", version=2))

    assert await store.get_facts(["f1"]) == [edited]


async def test_a_restatement_in_another_session_keeps_the_first_citation_in_the_history(
    store: MemoryStore,
) -> None:
    await (await Former(store).start()).form(berlin(10, "m1"))
    elsewhere = await Former(store, session_id="s2").start()

    await elsewhere.form(keep(50, "m7"))

    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.version, fact.said_at) == (BERLIN, 1, at(50 * DAY))
    assert (fact.source_session_id, fact.source_message_ids) == ("s2", ("m7",))
    [first] = fact.history
    assert (first.reason, first.content, first.version) == (CITED_BEFORE, BERLIN, 1)
    assert (first.source_session_id, first.source_message_ids) == ("s1", ("m1",))
    assert first.said_at == at(10 * DAY)
