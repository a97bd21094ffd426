"""Export → import into an empty store gives the same memory: the same context and the same
search results through MemoryClient, and the same export again; importing twice adds nothing."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from client.memory_client import MemoryClient
from memory.deps import Deps
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.lifecycle.writer import write_batch
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.harness import Harness, conversation
from tests.lifecycle.test_forget import _two_users

NOW = datetime(2026, 11, 22, tzinfo=UTC)  # the export's time, in its header


def _import_time() -> datetime:
    """The harness records and forms at the real time: an import is never dated before them
    (recorded timestamps more than a day ahead of the import are refused)."""
    return datetime.now(UTC)


QUERIES = ["green tea", "morning", "French", "night owl"]


async def _export(store: MemoryStore) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=True, now=NOW)
    return out.getvalue().splitlines()


async def _memory(client: MemoryClient) -> list[object]:
    seen: list[object] = []
    for session, user in (("s1", "alice"), ("s2", "bob")):
        seen.append(await client.memory_context("eve", session, user))
        for query in QUERIES:
            result = await client.search_facts("eve", query, user_id=user)
            seen.append([(hit.fact_id, hit.content, round(hit.score, 6)) for hit in result.hits])
    return seen


async def test_export_then_import_into_an_empty_store_gives_the_same_memory(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    exported = await _export(h.store)
    empty = SQLiteStore(tmp_path / "empty.db")
    await empty.setup()
    deps = Deps(settings=h.settings, store=empty, llm=h.llm, embedder=h.embedder)
    batch = to_import(read_export(exported))
    assert len(batch.facts) == 3 and len(batch.messages) == 8

    report = await write_batch(deps, batch, now=_import_time())
    again = await write_batch(deps, batch, now=_import_time())

    assert report.counts["facts"].inserted == 3 and report.embedded == 0  # same model: kept
    assert {k: c.inserted for k, c in again.counts.items()} == dict.fromkeys(again.counts, 0)
    assert again.counts["facts"].existing == 3 and again.counts["messages"].existing == 8
    # The copy exports exactly as the original (but for the export time, which is fixed here),
    # provenance included.
    assert await _export(empty) == exported
    copied = {f.user_id: f for f in await empty.get_facts([f.fact_id for f in batch.facts])}
    assert (copied["alice"].source_message_ids, copied["bob"].source_message_ids) == (
        ("m0000",),
        ("b0002",),
    )
    assert copied["alice"].said_at is not None and copied["alice"].formation_id is not None
    original = MemoryClient(h.client, h.store, h.settings, embedder=h.embedder)
    copy = MemoryClient(h.client, empty, h.settings, embedder=h.embedder)
    remembered = await _memory(original)
    assert any("Alice drinks green tea" in str(x) for x in remembered)
    assert await _memory(copy) == remembered
    # The imported conversations count as formed: nothing pending to form again.
    state = await empty.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (4, 0)
    await empty.close()


async def test_an_export_written_before_provenance_still_imports(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    old = []
    for line in await _export(h.store):
        record = json.loads(line)
        for key in ("source_message_ids", "formation_id", "said_at"):
            record.pop(key, None)
        old.append(json.dumps(record))
    empty = SQLiteStore(tmp_path / "empty.db")
    await empty.setup()
    deps = Deps(settings=h.settings, store=empty, llm=h.llm, embedder=h.embedder)
    batch = to_import(read_export(old))
    report = await write_batch(deps, batch, now=_import_time())
    assert report.counts["facts"].inserted == 3
    for fact in await empty.get_facts([f.fact_id for f in batch.facts]):
        assert (fact.source_message_ids, fact.said_at, fact.formation_id) == ((), None, None)
    await empty.close()


async def _copy(h: Harness, tmp_path: Path, lines: list[str]) -> tuple[int, int]:
    """The lines imported into a new store: session s1's (cursor, pending) for eve there."""
    copy = SQLiteStore(tmp_path / "copy.db")
    await copy.setup()
    deps = Deps(settings=h.settings, store=copy, llm=h.llm, embedder=h.embedder)
    await write_batch(deps, to_import(read_export(lines)), now=_import_time())
    state = await copy.get_session_agent_state("s1", "eve")
    await copy.close()
    assert state is not None
    return state.cursor_seq, state.pending_messages


async def test_a_store_moved_by_export_and_import_still_forms_what_it_had_not(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A live store's session has messages not formed yet (recorded since its last formation):
    moved to another store, they are still to form there, not counted as formed and skipped."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    async with h.worker():
        await h.form("s1")
    await h.record("s1", conversation(4, start=4))  # the pending tail, not formed yet
    source = await h.store.get_session_agent_state("s1", "eve")
    assert source is not None and (source.cursor_seq, source.pending_messages) == (4, 4)

    assert await _copy(h, tmp_path, await _export(h.store)) == (4, 4)


async def test_a_version_1_export_counts_its_messages_as_formed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A file written before exports said what was formed has no ``pending_for``: its messages
    count as formed, as they always did."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    old = []
    for line in await _export(h.store):
        record = json.loads(line)
        record.pop("pending_for", None)
        if record["type"] == "header":
            record["version"] = 1
        old.append(json.dumps(record))

    assert await _copy(h, tmp_path, old) == (4, 0)


def _without(exported: list[str], kind: str, field: str) -> list[str]:
    """The export as a file written before ``field`` of its ``kind`` records was kept."""
    lines = []
    for line in exported:
        record = json.loads(line)
        if record.get("type") == kind:
            record.pop(field)
        lines.append(json.dumps(record))
    return lines


async def test_a_reflection_keeps_when_it_was_said_through_export_and_import(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A consolidation merges reflections in the order they were said: an export carries each
    one's said_at and an import keeps it; a file written before it (no said_at) still imports,
    its reflections read in the order formed."""
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    exported = await _export(h.store)
    said = {
        r.content: r.said_at for key in (h.key("user"), h.key("user", user="bob"))
        for r in await h.buffered(key)
    }  # fmt: skip
    # Each is the time of the conversation's latest message, not when it was formed.
    assert said == {
        "Alice is a morning person": conversation(4)[-1].created_at,
        "Bob is a night owl": conversation(4, user="bob", prefix="b")[-1].created_at,
    }
    before = _without(exported, "reflection", "said_at")
    for name, lines, expected in (("copy", exported, said), ("before", before, None)):
        store = SQLiteStore(tmp_path / f"{name}.db")
        await store.setup()
        deps = Deps(settings=h.settings, store=store, llm=h.llm, embedder=h.embedder)
        batch = to_import(read_export(lines))
        report = await write_batch(deps, batch, now=_import_time())
        assert report.counts["reflections"].inserted == 2
        copied = [await store.get_reflection(r.reflection_id) for r in batch.reflections]
        assert {r.content: r.said_at for r in copied if r is not None} == (
            expected or dict.fromkeys(said)
        )
        await store.close()


async def test_a_blob_keeps_where_its_present_began_through_export_and_import(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A reflection said before all a blob holds is older than the blob: an export
    carries the blob's said_from and an import keeps it; a file written before it imports
    the blob with it unknown."""
    h = await Harness.create(time_env, tmp_path)
    await _two_users(h)
    key = h.key("user")
    said = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
    await h.store.commit_consolidation(
        key, expected_version=0, content="VERSION: 1\n- Alice is a morning person",
        word_limit=50, absorbed_ids=[], at=said, said_from=said,
    )  # fmt: skip
    exported = await _export(h.store)
    before = _without(exported, "consolidated", "said_from")
    for name, lines, expected in (("copy", exported, said), ("before", before, None)):
        store = SQLiteStore(tmp_path / f"{name}.db")
        await store.setup()
        deps = Deps(settings=h.settings, store=store, llm=h.llm, embedder=h.embedder)
        await write_batch(deps, to_import(read_export(lines)), now=_import_time())
        blob = await store.get_consolidated(key)
        await store.close()
        assert blob is not None and blob.content.endswith("morning person")
        assert blob.said_from == expected
