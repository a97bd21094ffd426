"""`mnemos import file` reads a big export a batch at a time (H181: 100,000 facts, a 345 MB
file, took 2.8 GB read whole): the same records written, the same counts, the same "already there"
and duplicates (a record's copy in a later batch too), the same dry run, and a cut file still
refused before anything is written (README "Import")."""

from __future__ import annotations

import json
import random
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.app import app
from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.lifecycle.checks import check_batch
from memory.lifecycle.dry_run import Judge, against_store, combined
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.import_file import PLAN_ORDER, FileIndex, batches, open_export, scan
from memory.lifecycle.people import session_people
from memory.lifecycle.plan import ImportPlan, plan
from memory.lifecycle.records import ImportBatch
from memory.lifecycle.writer import ImportReport, write_batch, write_batches
from memory.models import AgentConfig, ScopeKey
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.lifecycle.test_import_cli import env_of, mnemos, ok
from tests.lifecycle.test_import_guards import (
    NOW,
    StoreModelEmbedder,
    deps,
    export_lines,
    fact,
    message,
    records_of,
)
from tests.store.builders import AGENT_KEY, USER_KEY, Former, add, at, msg, record, reflection, unit

runner = CliRunner()

SMALL = 3  # records a batch holds here: every kind is cut into several batches
SESSION_KEY = ScopeKey.session("a1", "s1")


async def _source(store: MemoryStore) -> None:
    """Two agents' sessions: formed in part (a pending tail), facts, reflections absorbed into
    a blob and buffered, session memory, and a session of two users."""
    for agent_id in ("a1", "a2"):
        await store.upsert_agent(AgentConfig(agent_id=agent_id, name=agent_id.upper()))
    await record(store, "s1", "a1", [
        msg("m1", "I like green tea", seconds=1), msg("m2", "Noted", role="agent", seconds=2),
        msg("m3", "And hiking", seconds=3),
    ])  # fmt: skip
    await record(store, "s2", "a1", [msg("n1", "Coffee for me", user_id="u2", seconds=4)])
    await record(store, "s3", "a1", [
        msg("p1", "Hi both", seconds=5), msg("p2", "Hi", user_id="u2", seconds=6),
    ])  # fmt: skip
    await record(store, "s4", "a2", [msg("q1", "Hello a2", seconds=7)])
    absorbed = reflection(USER_KEY, 1, "Talks about tea")
    await Former(store).form(
        add("f1", "Likes green tea", unit(1)), add("f2", "Hikes on weekends", unit(0, 1)),
        add("f3", "Answers briefly", unit(0, 0, 1), scope="agent"),
        reflections=[absorbed, reflection(SESSION_KEY, 2, "Tea talk")],
    )  # fmt: skip
    await Former(store, "s2").form(
        add("g1", "Likes coffee", unit(1, 1), user_id="u2"),
        add("g2", "Drinks it black", unit(1, 0, 1), user_id="u2"),
    )
    await store.commit_consolidation(
        USER_KEY, expected_version=0, content="Likes tea", word_limit=100,
        absorbed_ids=[absorbed.reflection_id], at=at(200),
    )  # fmt: skip
    for key, content in ((SESSION_KEY, "Tea talk"), (AGENT_KEY, "Brief answers")):
        await store.commit_consolidation(
            key, expected_version=0, content=content, word_limit=100, absorbed_ids=[], at=at(210)
        )
    await store.import_reflections([reflection(USER_KEY, 3, "Tea again", seconds=220)])


def _with_duplicates(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The export's records, each kind together, with what a file may hold twice after the
    first of it, in a later batch: a fact's line again, another fact of the same text, a fact
    edited to another user (its id is u1's: imported under an id of its own), a reflection's
    and a blob's line again."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_type.setdefault(r["type"], []).append(r)
    first = by_type["fact"][0]
    by_type["fact"] += [
        first,
        {**first, "fact_id": "f9"},
        {**first, "user_id": "u3"},
    ]
    by_type["reflection"].append(by_type["reflection"][0])
    by_type["consolidated"].append(by_type["consolidated"][0])
    return [r for kind in ("agent", "fact", "reflection", "consolidated", "message")
            for r in by_type.get(kind, [])]  # fmt: skip


def _file(path: Path, header: str, records: list[dict[str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for r in records:
        counts[r["type"]] = counts.get(r["type"], 0) + 1
    lines = [header, *map(json.dumps, records), json.dumps({"type": "end", "counts": counts})]
    path.write_text("\n".join(lines) + "\n")
    return lines


async def _store(path: Path) -> SQLiteStore:
    store = SQLiteStore(path)
    await store.setup()
    return store


def _said(report: ImportReport) -> dict[str, Any]:
    """What the command prints (its --json)."""
    return vars(report)


async def _in_batches(store: MemoryStore, path: Path) -> tuple[ImportReport, list[int]]:
    """The file written as `mnemos import file` writes it, SMALL records a batch; the batches'
    sizes."""
    sizes: list[int] = []
    with open_export(path) as f:
        index = scan(f, now=NOW)
        report = await write_batches(
            deps(store), batches(f, index, size=SMALL), now=lambda: NOW,
            begun=lambda b: sizes.append(b.size), people=index.people, facts=bool(index.facts),
            known=index.known,
        )  # fmt: skip
    return report, sizes


async def _plan_in_batches(store: MemoryStore, path: Path) -> ImportPlan:
    with open_export(path) as f:
        index = scan(f, now=NOW)
        judge = Judge(store, index.known)
        parts = batches(f, index, order=PLAN_ORDER, size=SMALL)
        return combined([plan([await judge(batch)]) for batch in parts])


async def test_a_file_imported_in_small_batches_writes_what_one_batch_writes(
    tmp_path: Path,
) -> None:
    source = await _store(tmp_path / "source.db")
    await _source(source)
    exported = await export_lines(source)
    path = tmp_path / "export.jsonl"
    lines = _file(path, exported[0], _with_duplicates(records_of(exported)))
    whole_store = await _store(tmp_path / "whole.db")
    batched_store = await _store(tmp_path / "batched.db")
    batch = to_import(read_export(lines))  # the file read whole, as the import did

    whole = await write_batch(deps(whole_store), batch, now=NOW)
    batched, sizes = await _in_batches(batched_store, path)

    assert max(sizes) <= SMALL and len(sizes) >= batch.size / SMALL  # really in batches
    with open_export(path) as f:  # who the file's messages show, to its session memory
        assert scan(f, now=NOW).people == session_people(batch) == (("s1", ("a1",), ("u1",)),)
    assert _said(batched) == _said(whole)
    facts = whole.counts["facts"]
    assert (facts.inserted, facts.existing, facts.duplicate) == (6, 1, 1)  # u3's, under its id
    assert whole.counts["reflections"].existing == 1
    # The same store: facts (vectors, provenance), reflections absorbed and buffered, blobs,
    # messages with their sessions, the formation state (the pending tail) included.
    assert await export_lines(batched_store) == await export_lines(whole_store)
    assert await batched_store.get_session_agent_state("s1", "a1") == (
        await whole_store.get_session_agent_state("s1", "a1")
    )
    assert len(await batched_store.list_reflections(USER_KEY)) == 1  # the buffered one

    again = await write_batch(deps(whole_store), batch, now=NOW)
    batched_again, _ = await _in_batches(batched_store, path)

    assert _said(batched_again) == _said(again)
    assert {k: c.inserted for k, c in batched_again.counts.items()} == dict.fromkeys(
        again.counts, 0
    )
    again_facts = batched_again.counts["facts"]
    assert (again_facts.existing, again_facts.duplicate) == (len(batch.facts) - 1, 1)
    for store in (source, whole_store, batched_store):
        await store.close()


async def test_session_memory_in_another_batch_is_judged_by_all_the_files_messages(
    tmp_path: Path,
) -> None:
    """A forget of before session tombstones (an older release left none) deleted u1's session
    s1 whole: its session memory, in a batch without s1's messages, is still found a forgotten
    user's by who the file's messages show, as when the file was one batch."""
    source = await _store(tmp_path / "source.db")
    await _source(source)
    exported = await export_lines(source)
    path = tmp_path / "export.jsonl"
    batch = to_import(read_export(_file(path, exported[0], records_of(exported))))
    stores = [await _store(tmp_path / f"{name}.db") for name in ("whole", "batched")]
    for store in stores:
        await write_batch(deps(store), batch, now=NOW)
        await store.forget_user("u1", agent_id="a1", at=NOW)
    for name in ("whole", "batched"):  # the session tombstones: rows keyed by a scope key
        with sqlite3.connect(tmp_path / f"{name}.db") as conn:
            conn.execute("DELETE FROM erasures WHERE agent_key LIKE '%:%'")

    whole = await write_batch(deps(stores[0]), batch, now=NOW)
    batched, _ = await _in_batches(stores[1], path)

    assert whole.blobs[SESSION_KEY.key] == "forgotten"
    assert _said(batched) == _said(whole)
    assert await export_lines(stores[1]) == await export_lines(stores[0])
    for store in (source, *stores):
        await store.close()


async def test_a_dry_run_of_a_file_in_small_batches_says_what_one_batch_says(
    tmp_path: Path,
) -> None:
    """Before the import (a fact's second line "already there", as the import will find it) and
    after (everything there)."""
    source = await _store(tmp_path / "source.db")
    await _source(source)
    exported = await export_lines(source)
    path = tmp_path / "export.jsonl"
    lines = _file(path, exported[0], _with_duplicates(records_of(exported)))
    batch = to_import(read_export(lines))
    target = await _store(tmp_path / "target.db")

    before = await _plan_in_batches(target, path)
    assert before == plan([await against_store(target, batch)])
    assert before.total_dropped == 2  # the fact's and the reflection's second lines
    await write_batch(deps(target), batch, now=NOW)
    after = await _plan_in_batches(target, path)
    assert after == plan([await against_store(target, batch)])
    # All there but the fact of the same text, which the store refuses as a duplicate (a dry
    # run does not judge texts).
    assert after.total_imported == 1
    await source.close()
    await target.close()


def test_a_session_is_never_cut_across_batches(tmp_path: Path) -> None:
    """The store judges a session's messages against all of the file's (rules.import_sessions):
    a session of more messages than a batch holds is one batch."""
    header = json.dumps({"type": "header", "version": 2, "exported_at": NOW.isoformat()})
    messages = [
        {"type": "message", "session_id": sid, "seq": seq, "message_id": f"{sid}-{seq}",
         "role": "user", "content": "hi", "created_at": at(seq).isoformat(), "user_id": "u1",
         "agent_id": "a1"}
        for sid, n in (("s1", 2), ("s2", 5), ("s1x", 1)) for seq in range(1, n + 1)
    ]  # fmt: skip
    path = tmp_path / "export.jsonl"
    _file(path, header, messages)

    with open_export(path) as f:
        index: FileIndex = scan(f, now=NOW)
        parts: list[ImportBatch] = list(batches(f, index, size=SMALL))

    sessions = [[m.message.session_id for m in b.messages] for b in parts if b.messages]
    assert sessions == [["s1", "s1"], ["s2"] * 5, ["s1x"]]


async def test_an_embedder_the_stored_facts_do_not_match_is_refused_before_the_first_batch(
    tmp_path: Path,
) -> None:
    """The facts come after the agents' and messages' batches: the embedder is checked before
    those are written, as for one batch."""
    store = await _store(tmp_path / "target.db")
    await (await Former(store).start(1)).form(add("f1", "Likes coffee", unit(1)))

    class Wider(StoreModelEmbedder):
        dimension = 8

    path = tmp_path / "export.jsonl"
    header = json.dumps({"type": "header", "version": 2, "exported_at": NOW.isoformat()})
    _file(path, header, [
        {"type": "agent", "agent_id": "a9", "name": "a9"},
        {**message("m9", 1, session_id="s9", agent_id="a9"), "created_at": at(1).isoformat()},
        {**fact("f2"), "embedding": None, "formed_at": at(1).isoformat(),
         "updated_at": at(1).isoformat()},
    ])  # fmt: skip

    with open_export(path) as f, pytest.raises(EmbeddingMismatchError):
        index = scan(f, now=NOW)
        await write_batches(
            deps(store, Wider()), batches(f, index, size=1), now=lambda: NOW, facts=True
        )

    assert await store.get_agent("a9") is None and await store.get_session("s9") is None
    await store.close()


def test_bad_records_in_later_batches_are_named_as_in_one_batch(tmp_path: Path) -> None:
    """The first pass holds every record to the input rules: the refusal names the same
    records, in the same words, as when the file was one batch."""
    header = json.dumps({"type": "header", "version": 2, "exported_at": NOW.isoformat()})
    records = [
        *({**fact(f"f{i}", f"fact {i}"), "formed_at": at(1).isoformat(),
           "updated_at": at(1).isoformat()} for i in range(8)),
        {**fact("f8", "ring \x07"), "formed_at": at(1).isoformat(),
         "updated_at": at(1).isoformat()},
        {**message("m1", 1, content="nul\x00 byte"), "created_at": at(1).isoformat()},
    ]  # fmt: skip
    path = tmp_path / "export.jsonl"
    lines = _file(path, header, records)

    with pytest.raises(InvalidInputError) as whole:
        check_batch(to_import(read_export(lines)), now=NOW)
    with open_export(path) as f, pytest.raises(InvalidInputError) as scanned:
        scan(f, now=NOW)

    assert str(scanned.value) == str(whole.value)
    assert "fact f8" in str(whole.value) and "message m1" in str(whole.value)


# ---------------------------------------------------------------- the command


def _facts_file(path: Path, n: int, *, end: bool = True) -> None:
    """n facts of the local embedder's model and size (reused, not embedded again)."""
    rnd = random.Random(n)
    stamp = NOW.isoformat()
    lines = [
        {"type": "header", "version": 2, "exported_at": stamp},
        {"type": "agent", "agent_id": "a1", "name": "a1"},
        *(
            {"type": "fact", "fact_id": f"f{i}", "agent_id": "a1", "user_id": f"u{i % 7}",
             "scope": "user", "content": f"fact number {i}", "hash": "any",
             "embedding_model": "all-MiniLM-L6-v2-int8", "formed_at": stamp,
             "updated_at": stamp, "embedding": [rnd.uniform(-1, 1) for _ in range(384)]}
            for i in range(n)
        ),
    ]  # fmt: skip
    if end:
        lines.append({"type": "end", "counts": {"agent": 1, "fact": n}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _peak_of_import(tmp_path: Path, n: int) -> int:
    """Peak Python memory of `mnemos import file` of n facts (tracemalloc)."""
    path = tmp_path / f"{n}.jsonl"
    _facts_file(path, n)
    tracemalloc.start()
    try:
        result = runner.invoke(
            app, ["import", "file", str(path), "--json"], env=env_of(tmp_path, f"{n}.db")
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert json.loads(ok(result).stdout)["counts"]["facts"]["inserted"] == n
    return peak


def test_import_file_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    """A file twice as big takes no more memory: a batch (1,000 records) is held, not the
    file (read whole, the peak grew with it: 2.8 GB for 100,000 facts)."""
    one_batch = _peak_of_import(tmp_path, 1000)
    twice = _peak_of_import(tmp_path, 2000)

    assert twice < 1.25 * one_batch, (one_batch, twice)


@pytest.mark.parametrize("cut", ["no end line", "mid-line"])
def test_a_cut_file_bigger_than_a_batch_writes_nothing(tmp_path: Path, cut: str) -> None:
    """The first pass reads the whole file (its end line last) before the first batch is
    written: a file cut short, as a failed download leaves it, is refused with nothing written,
    not even the batches before the cut."""
    path = tmp_path / "cut.jsonl"
    _facts_file(path, 1200, end=False)
    if cut == "mid-line":
        path.write_bytes(path.read_bytes()[:-1000])
    env = env_of(tmp_path)

    for args in (["--dry-run"], []):
        result = runner.invoke(app, ["import", "file", str(path), *args], env=env)
        assert result.exit_code == 1, result.stdout
        line = result.stderr.strip()
        assert line.startswith("error: export line 1202: "), line
        assert "truncated" in line if cut == "no end line" else "Invalid JSON" in line

    assert not (tmp_path / "mnemos.db").exists()  # not even created


async def test_a_file_in_batches_judges_every_batch_by_the_tombstones_of_its_last(
    tmp_path: Path,
) -> None:
    """A newer export of a store imported over an older one, by `mnemos import file` a batch at a
    time: its erasure lines come in its last batch, yet what u1 said after the forget (in an
    earlier batch) is judged knowing of that forget, and comes; the dry run says so too."""
    source = await _store(tmp_path / "source.db")
    await record(source, "s1", "a1", [msg("m1", "I was diagnosed with asthma", seconds=1)])
    await source.forget_user("u1", agent_id="a1", at=at(300))
    first = await export_lines(source)
    await record(source, "s2", "a1", [msg("n1", "I moved to Lisbon", seconds=400)])
    second = await export_lines(source)
    await source.close()
    path = tmp_path / "second.jsonl"
    path.write_text("\n".join(second) + "\n")
    env = env_of(tmp_path)
    target = await _store(tmp_path / "mnemos.db")
    await write_batch(deps(target), to_import(read_export(first)), now=NOW)
    await target.close()

    dry = ok(await mnemos(env, "import", "file", str(path), "--dry-run", "--json"))
    ok(await mnemos(env, "import", "file", str(path)))
    target = await _store(tmp_path / "mnemos.db")
    said = [m.content for m in await target.load_messages("s2", 0, 10)]
    await target.close()

    assert said == ["I moved to Lisbon"]
    assert "forgotten user" not in dry.stdout
