"""Contract: a statement learnt late (a conversation backfilled after a later one, a session formed
by the cold job, a backlog after an outage) never undoes what was said after it, even when its
words are those of a fact the later statement retired (every backend; memory/store/rules/fact_ops).

Alice lived in Berlin (said in January); in November she said she had moved to Paris, and the
formation retired Berlin in favour of Paris. A March conversation, formed only now, says Berlin
again: Paris stays where she lives, and the March statement is kept, as replaced by Paris."""

from __future__ import annotations

import pytest

from memory.formation_commit import FactAdd, FactInvalidate
from memory.store.base import MemoryStore
from tests.store.builders import Former, add, at, unit

DAY = 86400.0
BERLIN, PARIS = "Alice lives in Berlin", "Alice lives in Paris"


def said(fact_id: str, text: str, day: float, message: str) -> FactAdd:
    vector = unit(1, 0) if text == BERLIN else unit(0, 1)
    return add(fact_id, text, vector).model_copy(
        update={"source_message_ids": (message,), "said_at": at(day * DAY)}
    )


async def _moved_to_paris(store: MemoryStore) -> Former:
    """January's Berlin (f1), retired by November's Paris (f2)."""
    former = await Former(store).start()
    await former.form(said("f1", BERLIN, 10, "m1"))
    await former.form(
        said("f2", PARIS, 300, "m2"),
        FactInvalidate(fact_id="f1", expected_version=1, replaced_by="f2"),
    )
    return former


@pytest.mark.parametrize("decision", ["DELETE Paris", "ADD"])
async def test_a_statement_said_before_a_move_does_not_bring_the_old_address_back(
    store: MemoryStore, decision: str
) -> None:
    """The model, asked about March's Berlin beside Paris, retires Paris (DELETE) or keeps both
    (ADD): either way March is older than the move."""
    former = await _moved_to_paris(store)
    march = said("f3", BERLIN, 70, "m3")
    ops = (
        (FactInvalidate(fact_id="f2", expected_version=1, replaced_by="f3"),)
        if decision != "ADD"
        else ()
    )

    await former.form(march, *ops)

    january, paris, kept = await store.get_facts(["f1", "f2", "f3"])
    assert (paris.content, paris.invalidated_at) == (PARIS, None)
    assert january.invalidated_by == "f2"  # not revived
    # What March said is kept, with its own source and time, as replaced by the later move.
    assert (kept.content, kept.source_message_ids, kept.said_at) == (BERLIN, ("m3",), at(70 * DAY))
    assert kept.invalidated_by == "f2"


async def test_the_old_address_said_again_after_the_move_comes_back(store: MemoryStore) -> None:
    """She moved back in December: said after the move, Berlin is revived as before."""
    former = await _moved_to_paris(store)

    await former.form(
        said("f3", BERLIN, 330, "m3"),
        FactInvalidate(fact_id="f2", expected_version=1, replaced_by="f3"),
    )

    january, paris = await store.get_facts(["f1", "f2"])
    assert (january.invalidated_at, january.said_at) == (None, at(330 * DAY))
    assert paris.invalidated_by == "f1"
    assert await store.get_facts(["f3"]) == []


async def test_a_restatement_of_a_current_fact_said_before_a_newer_one_does_not_retire_it(
    store: MemoryStore,
) -> None:
    """Berlin and Paris both current (the November formation kept both); March's Berlin is a
    duplicate of January's, and the model retires Paris with it: said before Paris, it does
    not, and January's fact is left as it was."""
    former = await Former(store).start()
    await former.form(said("f1", BERLIN, 10, "m1"))
    await former.form(said("f2", PARIS, 300, "m2"))

    result = await former.form(
        said("f3", BERLIN, 70, "m3"),
        FactInvalidate(fact_id="f2", expected_version=1, replaced_by="f3"),
    )

    assert (result.facts_duplicate, result.facts_invalidated) == (1, 0)
    january, paris = await store.get_facts(["f1", "f2"])
    assert (paris.invalidated_at, january.invalidated_at) == (None, None)
    assert january.source_message_ids == ("m1",)
