"""Contract: every fact and reflection says which messages it came from, which formation wrote it
and when it was said; an update keeps the earlier version's provenance in the history (every
backend)."""

from __future__ import annotations

from memory.formation_commit import FactInvalidate, FactUpdate
from memory.ids import formation_id
from memory.store.base import MemoryStore
from tests.store.builders import (
    AGENT_KEY,
    USER_KEY,
    Former,
    add,
    at,
    msg,
    record,
    reflection,
    unit,
)


async def test_a_formed_fact_keeps_its_sources_formation_and_time(store: MemoryStore) -> None:
    former = await Former(store).start()
    op = add("f1", "Alice lives in Paris", unit(1, 0)).model_copy(
        update={"source_message_ids": ("m1", "m3"), "said_at": at(30)}
    )
    sourced = reflection(USER_KEY, 0, "Alice likes short answers").model_copy(
        update={"source_message_ids": ("m2",), "formation_id": formation_id("s1", "a1", 0, 1)}
    )
    await former.form(op, reflections=[sourced])

    [fact] = await store.get_facts(["f1"])
    assert fact.source_message_ids == ("m1", "m3")
    assert fact.said_at == at(30)
    assert fact.formation_id == formation_id("s1", "a1", 0, 1)
    [stored] = await store.unabsorbed_reflections(USER_KEY, limit=10)
    assert (stored.source_message_ids, stored.formation_id) == (
        ("m2",),
        formation_id("s1", "a1", 0, 1),
    )


async def _said_then_changed(
    store: MemoryStore, first: tuple[str, str, float], change: tuple[str, str, float]
) -> Former:
    """Fact f1 formed from (text, message, said at), then UPDATEd by the second."""
    former = await Former(store).start()
    text, message, seconds = first
    await former.form(
        add("f1", text, unit(1, 0)).model_copy(
            update={"source_message_ids": (message,), "said_at": at(seconds)}
        )
    )
    text, message, seconds = change
    await former.form(
        FactUpdate(
            fact_id="f1",
            expected_version=1,
            content=text,
            embedding=unit(1, 0),
            reason="changed",
            source_message_ids=(message,),
            said_at=at(seconds),
        )
    )
    return former


async def test_an_update_cites_its_messages_first_and_keeps_the_old_in_history(
    store: MemoryStore,
) -> None:
    await _said_then_changed(
        store, ("Alice likes jazz", "m1", 10), ("Alice likes jazz and rock", "m5", 50)
    )

    [fact] = await store.get_facts(["f1"])
    assert (fact.version, fact.content) == (2, "Alice likes jazz and rock")
    # Its own message first, then the earlier version's: it is still the same fact, merged.
    assert fact.source_message_ids == ("m5", "m1")
    assert (fact.said_at, fact.formation_id) == (at(50), formation_id("s1", "a1", 1, 2))
    [revision] = fact.history
    assert (revision.content, revision.source_message_ids) == ("Alice likes jazz", ("m1",))
    assert (revision.said_at, revision.formation_id) == (at(10), formation_id("s1", "a1", 0, 1))
    assert fact.source_session_id == revision.source_session_id == "s1"


async def test_a_correction_cites_only_the_message_that_said_it(store: MemoryStore) -> None:
    await _said_then_changed(
        store, ("Alice lives in Paris", "m1", 10), ("Alice lives in Berlin", "m5", 50)
    )

    [fact] = await store.get_facts(["f1"])
    # m1 said Paris: shown as a source of "Alice lives in Berlin" it would say what it never did.
    assert (fact.content, fact.source_message_ids, fact.said_at) == (
        "Alice lives in Berlin", ("m5",), at(50),
    )  # fmt: skip
    [revision] = fact.history
    assert (revision.content, revision.source_message_ids) == ("Alice lives in Paris", ("m1",))


async def test_an_update_from_another_session_cites_that_sessions_messages_only(
    store: MemoryStore,
) -> None:
    """Message ids are unique within a session only (both sessions have an m1): the version said
    in s2 cites s2's messages, under s2; the earlier version's stay, with s1, in its revision."""
    await record(store, "s1", "a1", [msg("m1", "I live in Paris", seconds=10)])
    moved = [msg("m1", "I moved to Berlin", seconds=500), msg("m2", "last week", seconds=510)]
    await record(store, "s2", "a1", moved)
    await Former(store, "s1").form(
        add("f1", "Alice lives in Paris", unit(1, 0)).model_copy(
            update={"source_message_ids": ("m1",), "said_at": at(10)}
        )
    )
    berlin = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Berlin", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m2", "m1"), said_at=at(510),
    )  # fmt: skip
    await Former(store, "s2").form(berlin)

    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.source_session_id) == ("Alice lives in Berlin", "s2")
    assert fact.source_message_ids == ("m2", "m1")  # s2's only: no s1 id listed under s2
    assert (fact.said_at, fact.formation_id) == (at(510), formation_id("s2", "a1", 0, 1))
    cited = await store.get_messages(fact.source_session_id or "", fact.source_message_ids)
    assert [m.content for m in cited] == ["I moved to Berlin", "last week"]
    [revision] = fact.history
    assert (revision.content, revision.source_session_id) == ("Alice lives in Paris", "s1")
    assert (revision.source_message_ids, revision.said_at) == (("m1",), at(10))
    assert revision.formation_id == formation_id("s1", "a1", 0, 1)


async def test_an_earlier_statement_from_another_session_is_kept_with_its_session(
    store: MemoryStore,
) -> None:
    """An older conversation imported after a newer one: its statement goes to the history (it
    does not replace the later one), naming the session its messages are in."""
    await record(store, "s1", "a1", [msg("m1", "I moved to Berlin", seconds=500)])
    await record(store, "s2", "a1", [msg("m1", "I live in Paris", seconds=10)])
    await Former(store, "s1").form(
        add("f1", "Alice lives in Berlin", unit(1, 0)).model_copy(
            update={"source_message_ids": ("m1",), "said_at": at(500)}
        )
    )
    paris = FactUpdate(
        fact_id="f1", expected_version=1, content="Alice lives in Paris", embedding=unit(1, 0),
        reason="moved", source_message_ids=("m1",), said_at=at(10),
    )  # fmt: skip
    await Former(store, "s2").form(paris)

    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.source_session_id, fact.source_message_ids) == (
        "Alice lives in Berlin", "s1", ("m1",),
    )  # fmt: skip
    [revision] = fact.history
    assert (revision.content, revision.source_session_id) == ("Alice lives in Paris", "s2")
    assert (revision.source_message_ids, revision.said_at) == (("m1",), at(10))


async def test_a_statement_said_before_the_current_version_does_not_replace_it(
    store: MemoryStore,
) -> None:
    """A message recorded late (its created_at before the fact's said_at): the later statement
    stays current, and the earlier one is kept, in the history or as a replaced fact."""
    former = await _said_then_changed(
        store, ("Alice's phone number is 555-9999", "m2", 50),
        ("Alice's phone number is 555-1234", "m1", 10),
    )  # fmt: skip

    [fact] = await store.get_facts(["f1"])
    assert (fact.content, fact.said_at, fact.source_message_ids) == (
        "Alice's phone number is 555-9999",
        at(50),
        ("m2",),
    )
    [revision] = fact.history
    assert (revision.content, revision.said_at, revision.source_message_ids) == (
        "Alice's phone number is 555-1234",
        at(10),
        ("m1",),
    )
    # Retired (DELETE) by what was said before it: it stands; the earlier statement is kept,
    # replaced by it.
    gone = add("f2", "Alice no longer has a phone", unit(0, 1)).model_copy(
        update={"source_message_ids": ("m0",), "said_at": at(5)}
    )
    retire = FactInvalidate(fact_id="f1", expected_version=2, replaced_by="f2")
    await former.form(gone, retire)
    current, earlier = await store.get_facts(["f1", "f2"])
    assert (current.content, current.invalidated_at) == ("Alice's phone number is 555-9999", None)
    assert earlier.invalidated_by == "f1"


async def test_a_fact_without_provenance_reads_back_without_it(store: MemoryStore) -> None:
    """Facts of older stores and imports of older exports carry none."""
    former = await Former(store).start()
    await former.form(add("f1", "Alice lives in Paris", unit(1, 0)))
    [fact] = await store.get_facts(["f1"])
    assert (fact.source_message_ids, fact.said_at) == ((), None)


async def test_a_facts_source_messages_are_read_back_by_id(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "one"), msg("m2", "two"), msg("m3", "three")])
    await record(store, "s2", "a1", [msg("m1", "other session")])

    found = await store.get_messages("s1", ["m3", "nope", "m1"])
    assert [(m.message_id, m.content, m.seq) for m in found] == [
        ("m1", "one", 1),
        ("m3", "three", 3),
    ]
    assert await store.get_messages("s1", []) == []
    assert await store.get_messages("missing", ["m1"]) == []


async def test_a_fact_added_by_a_commit_is_corrected_by_a_later_op_of_the_same_commit(
    store: MemoryStore,
) -> None:
    """A correction within one window: the op names the new fact's id, and applies to the fact
    that add resolved to (itself, or the stored fact it turned out to repeat)."""
    former = await Former(store).start()
    await former.form(add("f1", "Alice's locker is blue", unit(0, 1)))

    def corrected(fact_id: str, content: str) -> FactUpdate:
        return FactUpdate(
            fact_id=fact_id, expected_version=1, content=content, embedding=unit(1, 0),
            reason="corrected", source_message_ids=("m2",), said_at=at(20),
        )  # fmt: skip

    await former.form(
        add("n1", "Alice's phone number is 555-1234", unit(1, 0)),
        corrected("n1", "Alice's phone number is 555-9999"),
        add("n2", "Alice's locker is blue", unit(0, 1)),  # repeats f1: resolves to it
        corrected("n2", "Alice's locker is green"),
    )
    phone, locker = await store.get_facts(["n1", "f1"])
    assert (phone.content, phone.version) == ("Alice's phone number is 555-9999", 2)
    assert [r.content for r in phone.history] == ["Alice's phone number is 555-1234"]
    assert (locker.content, locker.version) == ("Alice's locker is green", 2)
    assert await store.get_facts(["n2"]) == []


async def test_a_reflection_keeps_when_it_was_said_formed_edited_and_imported(
    store: MemoryStore,
) -> None:
    """A consolidation merges a batch in the order it was said (memory.models.in_said_order): a
    reflection keeps the time of its latest source message on every backend, an edit keeps it,
    an import keeps it; one stored before said_at was kept reads None (ordered as formed)."""
    former = await Former(store).start()
    said = reflection(USER_KEY, 0, "Alice gave up coffee", seconds=100).model_copy(
        update={"said_at": at(5)}
    )
    before = reflection(USER_KEY, 1, "Alice likes short answers", seconds=100)
    await former.form(reflections=[said, before])

    stored = await store.unabsorbed_reflections(USER_KEY)
    assert [(r.content, r.said_at) for r in stored] == [
        ("Alice gave up coffee", at(5)),
        ("Alice likes short answers", None),
    ]
    edited = await store.edit_reflection(said.reflection_id, content="Alice drinks green tea")
    assert edited.said_at == at(5)
    assert (await store.get_reflection(said.reflection_id)) == edited

    imported = reflection(AGENT_KEY, 2, "Eve answers in French", seconds=100).model_copy(
        update={"said_at": at(7)}
    )
    await store.import_reflections([imported])
    assert await store.get_reflection(imported.reflection_id) == imported


async def test_a_blob_keeps_when_what_it_absorbed_was_said(store: MemoryStore) -> None:
    """A reflection said before all a blob holds is older than it
    (memory.models.said_before): the blob keeps that time on every backend, through a
    consolidation and an import; a commit that gives none (a person's first edit, a draft of an
    older worker) reads None, as a blob stored before it was kept."""
    first = await store.commit_consolidation(
        USER_KEY, expected_version=0, content="VERSION: 1\n- green tea", word_limit=50,
        absorbed_ids=[], at=at(10), said_from=at(5),
    )  # fmt: skip
    assert first.said_from == at(5)
    assert await store.get_consolidated(USER_KEY) == first
    unknown = await store.commit_consolidation(
        USER_KEY, expected_version=1, content="VERSION: 2\n- tea", word_limit=50,
        absorbed_ids=[], at=at(11), edited_by="manual",
    )  # fmt: skip
    assert unknown.said_from is None
    assert await store.get_consolidated(USER_KEY) == unknown

    imported = first.model_copy(update={"scope_key": AGENT_KEY, "said_from": at(7)})
    assert await store.import_consolidated([imported]) == {AGENT_KEY.key: "inserted"}
    assert await store.get_consolidated(AGENT_KEY) == imported
