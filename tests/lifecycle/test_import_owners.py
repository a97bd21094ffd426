"""One source imported for two agents or users (README "Import": `--agent` applies to the memories
that name none; "already there" is a re-run): each gets its own memories, and a re-run for the
same one, even of a file a version before this imported, imports nothing twice. A mem0 dump
imported for a second assistant, and a `mnemos export` file edited to another agent or user."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from memory.lifecycle.dry_run import THERE, against_store
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.mem0 import map_mem0
from memory.lifecycle.writer import write_batch
from memory.models import FactFilter, ScopeKey
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.lifecycle.test_import_cli import env_of, mnemos, ok
from tests.lifecycle.test_import_guards import AGENT, NOW, deps, export_file, fact, import_lines
from tests.store.builders import at

ITEMS = [
    {"id": "8c2b1f0e-1a2b-4c3d-9e8f-000000000001", "memory": "Is a vegetarian",
     "created_at": "2025-07-20T01:30:00Z", "user_id": "alice"},
    {"id": "8c2b1f0e-1a2b-4c3d-9e8f-000000000002", "memory": "Allergic to nuts",
     "created_at": "2025-07-21T10:00:00Z", "user_id": "alice"},
]  # fmt: skip
CONTENTS = ["Allergic to nuts", "Is a vegetarian"]


async def _contents(db: Path, agent_id: str) -> list[str]:
    store = SQLiteStore(db)
    try:
        facts = await store.list_facts(FactFilter(agent_id=agent_id, user_id="alice"))
    finally:
        await store.close()
    return sorted(f.content for f in facts)


async def test_one_mem0_dump_imported_for_two_agents_gives_each_its_facts(tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps(ITEMS))
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef"))

    dry = ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "waiter", "--dry-run"))
    second = ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "waiter"))
    again = ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "waiter"))
    dry_again = ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "waiter", "--dry-run"))

    assert "already there" not in dry.stdout and "total: 2 to import" in dry.stdout
    assert "facts: 2 imported" in second.stdout
    assert await _contents(tmp_path / "mnemos.db", "waiter") == CONTENTS
    assert await _contents(tmp_path / "mnemos.db", "chef") == CONTENTS
    # A re-run for the same agent is still one.
    assert "facts: 0 imported, 2 already there" in again.stdout
    assert "drop 2: already there" in dry_again.stdout


def _id_of_before(mem0_id: str) -> str:
    """The fact id mnemos gave a mem0 memory before ids named its agent and user."""
    joined = "\x1f".join(("import", "mem0", "memories", mem0_id))
    return "f_" + hashlib.sha256(joined.encode()).hexdigest()[:24]


async def test_a_mem0_dump_imported_by_the_version_before_is_already_there(
    store: MemoryStore,
) -> None:
    batch = map_mem0(ITEMS, default_agent="chef", now=NOW)
    before = batch.model_copy(update={"facts": tuple(
        f.model_copy(update={"fact_id": _id_of_before(f.source.source_id), "other_id": None})
        for f in batch.facts
    )})  # fmt: skip
    await write_batch(deps(store), before, now=NOW)

    dry = await against_store(store, batch)
    rerun = await write_batch(deps(store), batch, now=NOW)
    waiter = await write_batch(
        deps(store), map_mem0(ITEMS, default_agent="waiter", now=NOW), now=NOW
    )

    assert not dry.facts and [d.reason for d in dry.dropped] == [THERE, THERE]
    assert (rerun.counts["facts"].inserted, rerun.counts["facts"].existing) == (0, 2)
    chef = await store.list_facts(FactFilter(agent_id="chef", user_id="alice"))
    assert sorted(f.fact_id for f in chef) == sorted(_id_of_before(i["id"]) for i in ITEMS)
    assert waiter.counts["facts"].inserted == 2


def _edited(records: list[dict[str, Any]], **ids: str) -> list[dict[str, Any]]:
    """The records with their agent or user id changed, as a person edits an export file."""
    edited = []
    for r in records:
        key = r.get("scope_key")
        edited.append(
            {**r, **{k: v for k, v in ids.items() if k in r}}
            | ({"scope_key": {**key, **ids}} if key else {})
        )
    return edited


def _reflection(reflection_id: str) -> dict[str, Any]:
    return {
        "type": "reflection", "reflection_id": reflection_id, "content": "Alice likes examples",
        "scope_key": {"scope": "user", "agent_id": "a1", "user_id": "u1"},
        "source_session_id": "s1", "formed_at": at(10),
    }  # fmt: skip


@pytest.mark.parametrize("ids", [{"agent_id": "a2"}, {"user_id": "u2"}], ids=["agent", "user"])
async def test_an_export_file_edited_to_another_agent_or_user_imports_for_it_once(
    store: MemoryStore, ids: dict[str, str]
) -> None:
    records = [AGENT, {**AGENT, "agent_id": "a2", "name": "a2"}, fact("f_1"), _reflection("r_1")]
    await import_lines(store, export_file(*records))
    edited = export_file(*records[:2], *_edited(records[2:], **ids))

    dry = await against_store(store, to_import(read_export(edited)))
    report = await import_lines(store, edited)
    again = await import_lines(store, edited)
    original = await import_lines(store, export_file(*records))

    assert (len(dry.facts), len(dry.reflections), dry.dropped) == (1, 1, ())
    for what in ("facts", "reflections"):
        assert report.counts[what].inserted == 1, what
        assert (again.counts[what].inserted, again.counts[what].existing) == (0, 1), what
        assert (original.counts[what].inserted, original.counts[what].existing) == (0, 1), what
    owner = {"agent_id": "a1", "user_id": "u1"} | ids
    [moved] = await store.list_facts(FactFilter(**owner))
    assert moved.content == "Likes green tea" and moved.fact_id != "f_1"
    [kept] = await store.list_facts(FactFilter(agent_id="a1", user_id="u1"))
    assert kept.fact_id == "f_1"  # the store's own fact keeps its id
    [noted] = await store.list_reflections(ScopeKey.user(**owner), include_absorbed=True)
    assert noted.reflection_id != "r_1" and noted.content == "Alice likes examples"
    assert await store.get_reflection("r_1") is not None
