"""Contract: a fact keeps the UTC offset it was said in (Fact.said_utc_offset_minutes, the clock
of its latest source message; memory.said) beside said_at, which every store keeps as the UTC
instant: through the commit, an UPDATE said on another clock, a person's edit and delete, the
history, export and import, on every backend. A fact said in UTC, or stored before the offset
was kept, reads None (UTC)."""

from __future__ import annotations

import io
from datetime import UTC, timedelta, timezone

import pytest
from pydantic import ValidationError

from memory.formation_commit import FactUpdate
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.lifecycle.records import FactImport
from memory.lifecycle.stored import fact_of
from memory.models import Fact
from memory.store.base import MemoryStore
from tests.store.builders import MODEL, T0, Former, add, at, unit, user_filter, vec

CHICAGO = timezone(timedelta(hours=-5))
INDIA = timezone(timedelta(hours=5, minutes=30))


async def _said(store: MemoryStore, said_at: object = None) -> Fact:
    """Fact f1 formed from a message sent at ``said_at`` (as the pipeline hands it over: the
    instant on its speaker's clock)."""
    former = await Former(store).start()
    op = add("f1", "Alice is flying to Paris on 8 May", unit(1, 0))
    if said_at is not None:
        op = op.model_copy(update={"source_message_ids": ("m1",), "said_at": said_at})
    await former.form(op)
    [fact] = await store.get_facts(["f1"])
    return fact


async def test_a_fact_keeps_the_offset_it_was_said_in(store: MemoryStore) -> None:
    fact = await _said(store, at(30).astimezone(CHICAGO))
    # The instant in UTC, as before; the speaker's clock beside it.
    assert fact.said_at == at(30) and fact.said_at.utcoffset() == timedelta(0)
    assert fact.said_utc_offset_minutes == -300
    # Every read path: the context's FIFO and the listings read the same columns.
    [recent] = await store.recent_facts(user_filter(), since=T0, limit=10)
    assert recent.said_utc_offset_minutes == -300


async def test_a_fact_said_in_utc_or_not_said_reads_none(store: MemoryStore) -> None:
    assert (await _said(store, at(30))).said_utc_offset_minutes is None


async def test_a_fact_without_a_said_time_has_no_offset(store: MemoryStore) -> None:
    fact = await _said(store)
    assert (fact.said_at, fact.said_utc_offset_minutes) == (None, None)


async def _said_then_in_india(store: MemoryStore) -> Former:
    """f1 said in Chicago, then changed by a message sent from India: the former, for more."""
    await _said(store, at(10).astimezone(CHICAGO))
    former = Former(store)
    former.cursor = 1
    await former.form(
        FactUpdate(
            fact_id="f1", expected_version=1, content="Alice is flying to Rome on 9 May",
            embedding=unit(1, 0), reason="changed", source_message_ids=("m5",),
            said_at=at(50).astimezone(INDIA),
        )
    )  # fmt: skip
    return former


async def test_an_update_said_on_another_clock_moves_it_and_the_history_keeps_the_old(
    store: MemoryStore,
) -> None:
    former = await _said_then_in_india(store)
    [fact] = await store.get_facts(["f1"])
    assert (fact.said_at, fact.said_utc_offset_minutes) == (at(50), 330)
    [revision] = fact.history
    assert (revision.said_at, revision.said_utc_offset_minutes) == (at(10), -300)
    assert revision.said_at is not None and revision.said_at.utcoffset() == timedelta(0)

    # A person's edit keeps the said time, with its clock; the revision records the version's.
    edited = await store.edit_fact(
        "f1", content="Alice flies to Rome on 9 May", embedding=vec(1, 0),
        embedding_model=MODEL, at=at(200),
    )  # fmt: skip
    assert (edited.said_at, edited.said_utc_offset_minutes) == (at(50), 330)
    assert [r.said_utc_offset_minutes for r in edited.history] == [-300, 330]
    [reread] = await store.get_facts(["f1"])
    assert reread == edited

    # Said again in UTC: the offset moves with said_at (to None), not left from before. Said
    # after the edit, formed at 300 (one said before it would not undo the person's correction).
    former.cursor = 2
    update = FactUpdate(
        fact_id="f1", expected_version=3, content="Alice is flying to Oslo on 9 May",
        embedding=unit(1, 0), reason="changed", source_message_ids=("m6",),
        said_at=at(250).astimezone(UTC),
    )  # fmt: skip
    await store.commit_formation(
        former.next_commit(update).model_copy(update={"committed_at": at(300)})
    )
    [fact] = await store.get_facts(["f1"])
    assert (fact.said_at, fact.said_utc_offset_minutes) == (at(250), None)
    assert [r.said_utc_offset_minutes for r in fact.history] == [-300, 330, 330]


async def test_export_and_import_carry_the_offset(store: MemoryStore) -> None:
    await _said_then_in_india(store)
    [original] = await store.get_facts(["f1"])
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=False, now=T0)
    [line] = [x for x in out.getvalue().splitlines() if '"type":"fact"' in x]
    assert '"said_utc_offset_minutes":330' in line and '"said_utc_offset_minutes":-300' in line

    # Imported as another agent's copy (the store already holds f1).
    [imported] = to_import(read_export(out.getvalue().splitlines())).facts
    copy = fact_of(imported, MODEL).model_copy(update={"fact_id": "f1-copy", "agent_id": "a2"})
    await store.import_facts([copy], [vec(1, 0)])
    [stored] = await store.get_facts(["f1-copy"])
    assert stored.said_utc_offset_minutes == 330
    assert stored.history == original.history
    assert [r.said_utc_offset_minutes for r in stored.history] == [-300]

    # A file written before the offset was kept (no such key) imports as before: UTC.
    older = [x.replace(',"said_utc_offset_minutes":330', "") for x in out.getvalue().splitlines()]
    older = [x.replace(',"said_utc_offset_minutes":-300', "") for x in older]
    assert not any("said_utc_offset_minutes" in x for x in older)
    [imported] = to_import(read_export(older)).facts
    copy = fact_of(imported, MODEL).model_copy(update={"fact_id": "f1-old", "agent_id": "a3"})
    await store.import_facts([copy], [vec(1, 0)])
    [stored] = await store.get_facts(["f1-old"])
    assert (stored.said_at, stored.said_utc_offset_minutes) == (at(50), None)
    assert [r.said_utc_offset_minutes for r in stored.history] == [None]


def _import_record(**said: object) -> FactImport:
    return FactImport.model_validate({
        "fact_id": "f9", "agent_id": "a1", "user_id": "u1", "scope": "user",
        "content": "Alice is flying to Paris on 8 May 2024", "formed_at": at(0),
        "updated_at": at(0), "source": {"system": "mem0", "collection": "memories",
        "source_id": "f9"}, **said,
    })  # fmt: skip


async def test_an_import_said_on_the_speakers_clock_is_kept_as_a_formed_fact_is(
    store: MemoryStore,
) -> None:
    # A converted or hand-made record: said_at with its offset, no said_utc_offset_minutes.
    record = _import_record(said_at=at(10).astimezone(CHICAGO))
    await store.import_facts([fact_of(record, MODEL)], [vec(1, 0)])
    [stored] = await store.get_facts(["f9"])
    assert stored.said_at is not None
    assert (stored.said_at, stored.said_at.utcoffset()) == (at(10), timedelta(0))
    assert stored.said_utc_offset_minutes == -300


def test_an_offset_no_clock_has_is_refused_before_anything_is_stored() -> None:
    with pytest.raises(ValidationError, match="said_utc_offset_minutes"):
        _import_record(said_at=at(10), said_utc_offset_minutes=1440)
    with pytest.raises(ValidationError, match="said_utc_offset_minutes"):
        _import_record(said_at=at(10), history=[{
            "version": 1, "content": "Alice flies to Paris", "changed_at": at(0),
            "said_at": at(5), "said_utc_offset_minutes": -99999,
        }])  # fmt: skip
