"""Every integer an import stores fits the signed 64 bits all three stores hold (memory.models
StoredInt): a bigger one is refused before the first write, naming the record and the field, on
every backend. Stored, it failed in the driver (OverflowError on SQLite and MongoDB, out of range
on PostgreSQL) after the agents and earlier sessions were written: a half import."""

from __future__ import annotations

from typing import Any

import pytest

from memory.errors import InvalidInputError
from memory.lifecycle.checks import MAX_IMPORTED_SEQ
from memory.lifecycle.export import ExportFormatError
from memory.lifecycle.records import (
    AgentImport,
    ConsolidatedImport,
    FactImport,
    ImportBatch,
    MessageImport,
    SourceRef,
)
from memory.lifecycle.writer import write_batch
from memory.models import Fact, MessageIn, StoredMessage
from memory.store.base import MemoryStore
from tests.lifecycle.test_import_guards import (
    AGENT,
    NOW,
    deps,
    export_file,
    fact,
    import_lines,
    message,
)
from tests.store.builders import MODEL, USER_KEY, at, unit

TOO_BIG = 2**63  # one past the largest signed 64-bit integer


async def _nothing_written(store: MemoryStore) -> None:
    assert await store.get_agent("a1") is None
    assert await store.get_session("s0") is None
    assert await store.get_facts(["f1"]) == []
    assert await store.get_consolidated(USER_KEY) is None


async def test_a_file_with_a_seq_past_64_bits_is_refused_with_nothing_written(
    store: MemoryStore,
) -> None:
    ok = {**message("m0", 1), "session_id": "s0"}  # an earlier session, written first
    lines = export_file(AGENT, fact("f1"), ok, {**message("m1", 1), "seq": TOO_BIG})

    with pytest.raises(
        ExportFormatError, match=r"(?s)line 5: .*seq.*does not fit a signed 64-bit integer"
    ):
        await import_lines(store, lines)

    await _nothing_written(store)


async def test_a_seq_that_would_leave_the_next_message_none_is_refused(
    store: MemoryStore,
) -> None:
    """2^63 - 1 fits the stores, and left the session's next message no seq: every later
    recording failed (review H108). An import's seq goes up to 2^53 - 1, which every JSON
    reader reads exactly, and the session records on after it."""
    ok = {**message("m0", 1), "session_id": "s0"}
    lines = export_file(AGENT, fact("f1"), ok, {**message("m1", 1), "seq": 2**63 - 1})
    with pytest.raises(InvalidInputError, match=r"message\.seq: is over 9,007,199,254,740,991"):
        await import_lines(store, lines)
    await _nothing_written(store)

    await import_lines(store, export_file(AGENT, {**message("m1", 1), "seq": MAX_IMPORTED_SEQ}))
    session = message("m1", 1)["session_id"]
    said = MessageIn(message_id="m2", role="user", content="and then", created_at=NOW, user_id="u1")
    outcome = await store.record_messages(
        session, "a1", [said], weights={"user": 1.0}, chars_per_token=4.0, now=NOW
    )
    assert (outcome.inserted, outcome.state.last_seq) == (1, MAX_IMPORTED_SEQ + 1)


def _ref(source_id: str) -> SourceRef:
    return SourceRef(system="mem0", collection="memories", source_id=source_id)


def _fact(**fields: Any) -> FactImport:
    return FactImport(
        fact_id="f1", agent_id="a1", user_id="u1", scope="user", content="Likes green tea",
        formed_at=at(10), updated_at=at(10), embedding=unit(1), embedding_model=MODEL,
        source=_ref("f1"), **fields,
    )  # fmt: skip


def _message() -> MessageImport:
    stored = StoredMessage(
        session_id="s0", seq=1, message_id="m0", role="user", content="hello",
        created_at=at(1), user_id="u1", agent_id="a1",
    )  # fmt: skip
    return MessageImport(message=stored, source=_ref("m0"))


def _blob(**fields: Any) -> ConsolidatedImport:
    return ConsolidatedImport(
        scope_key=USER_KEY, content="Likes tea", updated_at=at(10), sources=(_ref("b1"),),
        **fields,
    )  # fmt: skip


# Import records the readers (mem0, Eden) build themselves, not through an export line.
BAD = {
    "fact version": (ImportBatch(facts=(_fact(version=TOO_BIG),)), "fact f1 .*: version"),
    "fact access count": (
        ImportBatch(facts=(_fact(access_count=TOO_BIG),)),
        "fact f1 .*: access_count",
    ),
    "blob word limit": (ImportBatch(consolidated=(_blob(word_limit=TOO_BIG),)), "word_limit"),
}


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
async def test_a_batch_with_an_integer_past_64_bits_is_refused_with_nothing_written(
    store: MemoryStore, bad: tuple[ImportBatch, str]
) -> None:
    batch, error = bad
    batch = ImportBatch(agents=(AgentImport(agent_id="a1"),), messages=(_message(),)) + batch

    with pytest.raises(InvalidInputError, match=f"nothing imported: .*{error}"):
        await write_batch(deps(store), batch, now=NOW)

    await _nothing_written(store)


def test_the_models_take_every_integer_a_store_holds_and_no_other() -> None:
    """The bound only refuses what no store can hold: whatever a store returns still reads."""
    edge = {"version": 2**63 - 1, "access_count": -(2**63)}
    fields = {
        "fact_id": "f1", "agent_id": "a1", "scope": "agent", "content": "Likes tea",
        "hash": "h", "embedding_model": MODEL, "formed_at": at(1), "updated_at": at(1),
    }  # fmt: skip
    assert Fact.model_validate({**fields, **edge}).version == 2**63 - 1
    for name, value in (("version", TOO_BIG), ("access_count", -TOO_BIG - 1)):
        with pytest.raises(ValueError, match=name):
            Fact.model_validate({**fields, name: value})
