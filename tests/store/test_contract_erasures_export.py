"""Contract: a store moved by `mnemos export` and `mnemos import file` keeps who was forgotten.
The export carries the erasure tombstones (rules.erasure; ids, epochs and counts, never content)
and the import merges them after the file's other records (rules.import_erasures): an older file
of a forgotten user (a backup, a resumable import of the original source) brings nothing of them
back into the new store, while a user who came back after the forget moves with what they said
since. On every backend: the source and the copy are stores of the backend under test."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from memory.lifecycle.export import ExportFormatError, read_export
from memory.lifecycle.exporting import export_store
from memory.models import AgentConfig, ScopeKey
from memory.store.base import MemoryStore
from memory.store.rules.export import tombstone_of
from tests.lifecycle.test_import_guards import export_lines, import_lines
from tests.store.builders import Former, add, at, msg, record, reflection, unit
from tests.store.conftest import opened_store

SESSION_KEY = ScopeKey.session("a1", "s1")


async def _told_then_forgotten(store: MemoryStore) -> list[str]:
    """u1 alone with a1 in s1 (a fact, session memory of it), then forgotten by a1: the backup
    taken before the forget is returned."""
    await record(store, "s1", "a1", [
        msg("m1", "I was diagnosed with asthma", user_id="u1", seconds=1),
        msg("m2", "Sorry to hear about your asthma", role="agent", seconds=2),
    ])  # fmt: skip
    noted = reflection(SESSION_KEY, 1, "The user talked about their asthma")
    await Former(store).form(add("f1", "Has asthma", unit(1)), reflections=[noted])
    await store.commit_consolidation(
        SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
        absorbed_ids=[noted.reflection_id], at=at(200),
    )  # fmt: skip
    backup = await export_lines(store)
    await store.forget_user("u1", agent_id="a1", at=at(300))
    return backup


async def _came_back(store: MemoryStore, seconds: float = 400) -> None:
    """u1 talks to a1 again after the forget (s2), and a fact of it is formed."""
    said = msg("n1", "I moved to Lisbon", user_id="u1", seconds=seconds)
    await record(store, "s2", "a1", [said])
    epochs = await store.erasure_epochs("a1", ["u1"])
    formed = Former(store, "s2").next_commit(add("f2", "Lives in Lisbon", unit(0, 1)))
    await store.commit_formation(formed.model_copy(update={"user_epochs": epochs}))


def _erasure_lines(lines: list[str]) -> list[dict[str, object]]:
    return [r for r in map(json.loads, lines) if r["type"] == "erasure"]


async def test_a_moved_store_never_imports_a_forgotten_user_again(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    backup = await _told_then_forgotten(store)
    moved = await export_lines(store)
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, moved)
        report = await import_lines(copy, backup)  # the old backup, into the moved store
        facts = await copy.get_facts(["f1"])
        session = await copy.get_session("s1")
        blob = await copy.get_consolidated(SESSION_KEY)
        epochs = await copy.erasure_epochs("a1", ["u1"])

    assert facts == [] and session is None and blob is None
    assert report.counts["facts"].forgotten == 1
    assert report.blobs[SESSION_KEY.key] == "forgotten"
    assert epochs == await store.erasure_epochs("a1", ["u1"]) == {"u1": 1}
    # The agent's tombstone and the one of the session memory the forget deleted; no content.
    assert {(r["agent_key"], r["user_id"]) for r in _erasure_lines(moved)} == {
        ("a1", "u1"),
        (SESSION_KEY.key, "u1"),
    }
    assert "asthma" not in json.dumps(_erasure_lines(moved)).lower()


async def test_a_user_who_came_back_after_the_forget_moves_with_the_store(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    backup = await _told_then_forgotten(store)
    await _came_back(store)
    moved = await export_lines(store)
    async with opened_store(backend, tmp_path / "copy") as copy:
        report = await import_lines(copy, moved)
        again = await import_lines(copy, backup)
        facts = sorted(f.content for f in await copy.get_facts(["f1", "f2"]))
        said = [m.content for m in await copy.load_messages("s2", 0, 10)]

    # What u1 said since the forget, and what was formed of it, moved; the backup still brings
    # nothing back.
    assert facts == ["Lives in Lisbon"]
    assert said == ["I moved to Lisbon"]
    assert report.counts["facts"].inserted == 1
    assert again.counts["facts"].forgotten == 1


async def test_importing_the_file_again_or_an_older_one_never_lowers_an_epoch(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    await _told_then_forgotten(store)
    first = await export_lines(store)  # epoch 1
    await store.forget_user("u1", agent_id=None, at=at(500))
    second = await export_lines(store)  # a1's epoch 1, every agent's 1: 2 in all
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, second)
        again = await import_lines(copy, second)
        older = await import_lines(copy, first)
        epochs = await copy.erasure_epochs("a1", ["u1"])
        exported = await export_lines(copy)

    assert epochs == await store.erasure_epochs("a1", ["u1"]) == {"u1": 2}
    assert again.counts["erasures"].inserted == older.counts["erasures"].inserted == 0
    assert _erasure_lines(exported) == _erasure_lines(second)


async def test_an_agents_export_carries_only_the_tombstones_that_bind_it(
    store: MemoryStore,
) -> None:
    """Its own, its session memory's, and every agent's forget of a user it had something of,
    or has since (u1 back with a2 after the forget): not the ids of users forgotten everywhere
    whom it never had (u2; u1 for a2 before u1 came to it) (h226 D5)."""
    await _told_then_forgotten(store)
    await store.upsert_agent(AgentConfig(agent_id="a2", name="Bea"))
    await store.forget_user("u1", agent_id=None, at=at(450))
    await store.forget_user("u2", agent_id=None, at=at(500))

    async def keys(agent_id: str) -> set[tuple[object, object]]:
        out = io.StringIO()
        await export_store(store, out, agent_id=agent_id, user_id=None, messages=True, now=at(600))
        return {(r["agent_key"], r["user_id"]) for r in _erasure_lines(out.getvalue().splitlines())}

    a1 = {("a1", "u1"), (SESSION_KEY.key, "u1"), ("*", "u1")}
    assert (await keys("a1"), await keys("a2")) == (a1, set())
    await record(store, "s3", "a2", [msg("n1", "Hi again", user_id="u1", seconds=550)])
    assert (await keys("a1"), await keys("a2")) == (a1, {("*", "u1")})


def test_a_tombstone_binds_its_agent_every_agent_and_its_session_memory() -> None:
    assert tombstone_of("a1", "a1") and tombstone_of("a1", "*")
    assert tombstone_of("a1", "session:a1:s1")
    assert not tombstone_of("a1", "a10") and not tombstone_of("a1", "session:a10:s1")
    assert not tombstone_of("a1", "a2")


def test_a_tombstone_line_of_no_agent_key_is_refused_before_anything_is_written() -> None:
    bad = {
        "type": "erasure", "agent_key": "session:a1", "user_id": "u1", "epoch": 1,
        "forgotten_at": "2025-01-01T12:00:00Z",
    }  # fmt: skip
    header = {"type": "header", "format": "mnemos-export", "version": 4,
              "exported_at": "2025-01-01T12:00:00Z"}  # fmt: skip
    end = {"type": "end", "counts": {"erasure": 1}}
    lines = [json.dumps(r) for r in (header, bad, end)]
    with pytest.raises(ExportFormatError, match="line 2: erasure: agent_key"):
        list(read_export(lines))


async def _agent_file(store: MemoryStore, agent_id: str) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=agent_id, user_id=None, messages=True, now=at(600))
    return out.getvalue().splitlines()


async def test_a_move_split_by_agent_keeps_a_user_who_came_back_in_either_order(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """u1 forgotten by every agent, then back with a2: a1's file carries the every-agent
    tombstone; a2's file, imported after it, still brings what u1 said to a2 since, as it knows
    of that forget (it carries the tombstone too). In either order, and an old backup of a1
    still brings nothing back."""
    await store.upsert_agent(AgentConfig(agent_id="a2", name="Bea"))
    backup = await _told_then_forgotten(store)
    await store.forget_user("u1", agent_id=None, at=at(350))
    await record(store, "s2", "a2", [msg("n1", "I moved to Lisbon", user_id="u1", seconds=400)])
    epochs = await store.erasure_epochs("a2", ["u1"])
    formed = Former(store, "s2", "a2").next_commit(add("f2", "Lives in Lisbon", unit(0, 1)))
    await store.commit_formation(formed.model_copy(update={"user_epochs": epochs}))
    a1_file, a2_file = await _agent_file(store, "a1"), await _agent_file(store, "a2")
    moved: list[tuple[list[str], list[str], int]] = []
    for order in ((a1_file, a2_file), (a2_file, a1_file)):
        async with opened_store(backend, tmp_path / f"copy{len(moved)}") as copy:
            for lines in order:
                await import_lines(copy, lines)
            old = await import_lines(copy, backup)
            facts = sorted(f.content for f in await copy.get_facts(["f1", "f2"]))
            said = [m.content for m in await copy.load_messages("s2", 0, 10)]
            moved.append((facts, said, old.counts["facts"].forgotten))

    assert moved == [(["Lives in Lisbon"], ["I moved to Lisbon"], 1)] * 2


async def test_a_newer_export_imported_over_an_older_one_brings_what_was_said_since(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """A store moved, then a newer export of the source imported to bring what is missing: both
    files carry the same tombstone, and what u1 said after the forget comes with the second."""
    await _told_then_forgotten(store)
    first = await export_lines(store)
    await record(store, "s2", "a1", [msg("n1", "I moved to Lisbon", user_id="u1", seconds=400)])
    second = await export_lines(store)
    async with opened_store(backend, tmp_path / "copy") as copy:
        await import_lines(copy, first)
        report = await import_lines(copy, second)
        said = [m.content for m in await copy.load_messages("s2", 0, 10)]

    assert said == ["I moved to Lisbon"], report.counts


async def _fork_file(
    backend: tuple[str, str | None], path: Path, backup: list[str], forgot_at: float
) -> list[str]:
    """A store forked from the backup (before the source's forget at 300) that forgot u1 itself
    at ``forgot_at`` (its epoch counts from 1 too), heard from u1 again 10 s after, and exported."""
    async with opened_store(backend, path) as fork:
        await import_lines(fork, backup)
        await fork.forget_user("u1", agent_id="a1", at=at(forgot_at))
        await _came_back(fork, seconds=forgot_at + 10)
        assert await fork.erasure_epochs("a1", ["u1"]) == {"u1": 1}
        return await export_lines(fork)


@pytest.mark.parametrize(("forgot_at", "brought"), [(250, []), (350, ["Lives in Lisbon"])])
async def test_a_forked_stores_forget_counts_as_known_only_if_it_came_after_this_one(
    store: MemoryStore,
    backend: tuple[str, str | None],
    tmp_path: Path,
    forgot_at: float,
    brought: list[str],
) -> None:
    """Epochs are counted by each store: the fork's forget of u1 and this store's are both
    epoch 1. A fork that forgot u1 before this store did holds what u1 said in between, before
    they asked here to forget them: its file brings none of it (it did, as its tombstone's epoch
    matched). One that forgot u1 after holds only what u1 said since: that moves."""
    backup = await _told_then_forgotten(store)  # forgotten here at 300
    fork = await _fork_file(backend, tmp_path / "fork", backup, forgot_at)
    report = await import_lines(store, fork)
    facts = [f.content for f in await store.get_facts(["f2"])]
    said = [m.content for m in await store.load_messages("s2", 0, 10)]

    assert facts == brought
    assert said == ["I moved to Lisbon"] * len(brought)
    assert report.counts["facts"].forgotten == 1 - len(brought)
    assert await store.erasure_epochs("a1", ["u1"]) == {"u1": 1}


async def test_a_forks_higher_epoch_keeps_this_stores_later_forget(
    store: MemoryStore, backend: tuple[str, str | None], tmp_path: Path
) -> None:
    """A fork that forgot u1 twice, both before this store's forget: its tombstone's epoch (2)
    is above this store's (1), its time earlier. The merged tombstone keeps epoch 2 and this
    store's time, so importing the fork's file again still brings nothing u1 said in between
    (it did once the tombstone took the fork's time), and this store's export says both."""
    backup = await _told_then_forgotten(store)  # forgotten here at 300
    async with opened_store(backend, tmp_path / "fork") as fork:
        await import_lines(fork, backup)
        await fork.forget_user("u1", agent_id="a1", at=at(200))
        await fork.forget_user("u1", agent_id="a1", at=at(250))
        await _came_back(fork, seconds=260)
        fork_file = await export_lines(fork)
    await import_lines(store, fork_file)
    again = await import_lines(store, fork_file)
    facts = await store.get_facts(["f2"])
    [line] = [r for r in _erasure_lines(await export_lines(store)) if r["agent_key"] == "a1"]

    assert facts == [] and again.counts["facts"].forgotten == 1
    assert again.counts["erasures"].inserted == 0
    assert (line["epoch"], line["forgotten_at"]) == (2, at(300).isoformat().replace("+00:00", "Z"))
