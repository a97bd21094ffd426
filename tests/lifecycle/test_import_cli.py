"""`mnemos import eden|mem0|file`, `mnemos export` and `mnemos forget` as an operator runs them:
Eden's two generations read from a MongoDB server (mongoeco), dry run first, the source only
read, a second run imports nothing twice."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from typer.testing import CliRunner, Result

from cli import common as cli_common
from cli.app import app
from memory.logging import configure_logging
from memory.models import AgentConfig
from memory.store.sqlite import SQLiteStore
from tests.cli_lines import one_error_line
from tests.lifecycle import eden_fixtures as fx
from tests.lifecycle.test_eden_mapping import agent_batch
from tests.lifecycle.test_import_guards import AGENT, export_file, fact
from tests.lifecycle.test_mem0 import ITEMS
from tests.mongo_server import running_mongo
from tests.store.builders import msg, record

runner = CliRunner()
Doc = dict[str, Any]


@pytest.fixture(autouse=True)
def _logging_outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    configure_logging("warning")
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)


def env_of(tmp_path: Path, name: str = "mnemos.db") -> dict[str, str]:
    return {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / name),
        "MNEMOS_TEMPORAL__ADDRESS": "127.0.0.1:1",
        "MNEMOS_MODELS__PROVIDER": "heuristic",
    }


def ok(result: Result) -> Result:
    assert result.exit_code == 0, f"exit {result.exit_code}\n{result.stdout}\n{result.stderr}"
    return result


async def mnemos(env: dict[str, str], *args: str) -> Result:
    return await asyncio.to_thread(runner.invoke, app, list(args), env=env)


def rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
async def eden() -> AsyncIterator[tuple[str, str, AsyncMongoClient[Doc]]]:
    async with running_mongo() as uri:
        client: AsyncMongoClient[Doc] = AsyncMongoClient(uri, tz_aware=False)
        name = f"eden_{uuid.uuid4().hex[:8]}"
        try:
            for collection, docs in fx.ALL.items():
                await client[name][collection].insert_many([dict(d) for d in docs])
            yield uri, name, client
        finally:
            await client.drop_database(name)
            await client.close()


async def _snapshot(client: AsyncMongoClient[Doc], name: str) -> dict[str, list[Doc]]:
    return {c: await client[name][c].find({}, sort=[("_id", 1)]).to_list() for c in fx.ALL}


@pytest.mark.mongo
async def test_eden_dry_run_then_import_then_nothing_twice(
    eden: tuple[str, str, AsyncMongoClient[Doc]], tmp_path: Path
) -> None:
    uri, name, client = eden
    env = env_of(tmp_path)
    before = await _snapshot(client, name)
    args = ["import", "eden", "--mongodb-uri", uri, "--db", name]
    expected = [agent_batch(fx.AGENT_A), agent_batch(fx.AGENT_B)]
    n_facts = sum(len(b.facts) for b in expected)

    dry = ok(await mnemos(env, *args, "--dry-run")).stdout
    assert f"agent {fx.AGENT_A}" in dry and f"agent {fx.AGENT_B}" in dry
    assert "episode" in dry  # what it drops, with the reason
    assert not (tmp_path / "mnemos.db").exists()  # a dry run writes nothing

    first = json.loads(ok(await mnemos(env, *args, "--json")).stdout)
    again = json.loads(ok(await mnemos(env, *args, "--json")).stdout)

    assert await _snapshot(client, name) == before  # the source is only read
    assert first["counts"]["facts"]["inserted"] == n_facts
    # No source vector is of the store's model: every fact was embedded again.
    assert first["embedded"] == n_facts
    assert {k: c["inserted"] for k, c in again["counts"].items()} == dict.fromkeys(
        again["counts"], 0
    )
    assert again["counts"]["facts"]["existing"] == n_facts
    db = tmp_path / "mnemos.db"
    facts = dict(rows(db, "SELECT content, previous_content FROM facts"))
    assert facts["Alice is allergic to peanuts"] == "Alice is allergic to nuts"  # memory2
    assert len(facts) == n_facts
    # v1 agent shards: one agent blob, concatenated under the word limit (heuristic provider).
    [(blob,)] = rows(db, f"SELECT content FROM consolidated WHERE scope_key = 'agent:{fx.AGENT_A}'")
    assert "Use plain language." in blob and "Users ask about pricing." in blob
    assert "Obsolete notes." not in blob


async def test_mem0_import_export_import_and_forget(tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": ITEMS}))
    env = env_of(tmp_path)

    first = json.loads(
        ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef", "--json")).stdout
    )
    again = json.loads(
        ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef", "--json")).stdout
    )

    imported = first["counts"]["facts"]["inserted"]
    assert imported > 0 and again["counts"]["facts"] | {"buffered": {}} == {
        "inserted": 0, "existing": imported, "duplicate": 0, "conflict": 0, "forgotten": 0,
        "buffered": {},
    }  # fmt: skip

    out = tmp_path / "export.jsonl"
    ok(await mnemos(env, "export", "--messages", "-o", str(out)))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["type"] == "end"
    assert lines[-1]["counts"]["fact"] == imported

    copy = env_of(tmp_path, "copy.db")
    dry = ok(await mnemos(copy, "import", "file", str(out), "--dry-run")).stdout
    assert "chef" in dry
    copied = json.loads(ok(await mnemos(copy, "import", "file", str(out), "--json")).stdout)
    assert copied["counts"]["facts"]["inserted"] == imported and copied["embedded"] == 0
    original = rows(tmp_path / "mnemos.db", "SELECT fact_id, content FROM facts ORDER BY fact_id")
    assert (
        rows(tmp_path / "copy.db", "SELECT fact_id, content FROM facts ORDER BY fact_id")
        == original
    )

    alice = [
        c
        for (c,) in rows(
            tmp_path / "mnemos.db", "SELECT content FROM facts WHERE user_id = 'alice'"
        )
    ]
    assert alice
    forgot = ok(
        await mnemos(
            env, "forget", "--agent", "chef", "--user", "alice", "--keep-executions", "--json"
        )
    )
    [counts] = json.loads(forgot.stdout)["agents"]
    assert counts["facts"] == len(alice)
    assert rows(tmp_path / "mnemos.db", "SELECT * FROM facts WHERE user_id = 'alice'") == []
    assert len(rows(tmp_path / "mnemos.db", "SELECT * FROM facts")) == imported - len(alice)
    # Importing the dump again does not bring alice back: she has an erasure tombstone.
    back = json.loads(
        ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef", "--json")).stdout
    )
    assert back["counts"]["facts"]["forgotten"] == len(alice)
    assert rows(tmp_path / "mnemos.db", "SELECT * FROM facts WHERE user_id = 'alice'") == []

    neither = await mnemos(env, "forget", "--user", "alice")
    assert neither.exit_code == 1 and "--all-agents" in neither.stderr


async def test_forget_erases_the_store_even_when_temporal_is_down(tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": ITEMS}))
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef"))
    db = tmp_path / "mnemos.db"
    assert rows(db, "SELECT * FROM facts WHERE user_id = 'alice'")

    result = await mnemos(env, "forget", "--all-agents", "--user", "alice")

    # Nothing listens at the Temporal address: the executions part fails, and says so.
    assert result.exit_code == 1
    assert "erased from the store" in result.stderr and "again" in result.stderr
    assert rows(db, "SELECT * FROM facts WHERE user_id = 'alice'") == []


async def test_forget_with_temporal_down_names_the_runs_of_the_sessions_it_deleted(
    tmp_path: Path,
) -> None:
    """A second forget finds the user's own runs again, not those of the sessions the first one
    deleted (a session consolidation is tagged with no user): the error names them."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="chef", name="Chef"))
    await record(store, "s1", "chef", [msg("m1", "my knee hurts", user_id="alice")])
    await store.close()

    result = await mnemos(env_of(tmp_path), "forget", "--agent", "chef", "--user", "alice")

    assert result.exit_code == 1 and "erased from the store" in result.stderr
    query = "WorkflowId IN ('form:chef:s1', 'end:chef:s1', 'consolidate:session:chef:s1')"
    assert f'temporal workflow delete --query "{query}' in result.stderr


async def test_forget_without_search_attributes_asks_temporal_nothing(tmp_path: Path) -> None:
    """As the client: a namespace without the Mnemos search attributes is not queried for runs
    (the query would be refused), so the forget finishes with Temporal out of reach."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="chef", name="Chef"))
    await record(store, "s1", "chef", [msg("m1", "my knee hurts", user_id="alice")])
    await store.close()
    env = {**env_of(tmp_path), "MNEMOS_TEMPORAL__SEARCH_ATTRIBUTES": "false"}

    result = await mnemos(env, "forget", "--agent", "chef", "--user", "alice", "--json")

    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["workflow_executions_deleted"] is None


async def test_a_dry_run_refuses_what_the_import_would_and_writes_nothing(tmp_path: Path) -> None:
    dump = tmp_path / "mem0.json"
    bad = [*ITEMS, {**ITEMS[0], "id": "8c2b1f0e-1a2b-4c3d-9e8f-0000000000ff", "memory": "\x1b[2J"}]
    dump.write_text(json.dumps({"results": bad}))
    env = env_of(tmp_path)

    dry = await mnemos(env, "import", "mem0", str(dump), "--agent", "chef", "--dry-run")
    real = await mnemos(env, "import", "mem0", str(dump), "--agent", "chef")

    for result in (dry, real):
        assert result.exit_code == 1 and "nothing imported" in result.stderr
        assert "U+001B" in result.stderr
    assert not (tmp_path / "mnemos.db").exists() or not rows(
        tmp_path / "mnemos.db", "SELECT * FROM facts"
    )


def test_an_unreachable_eden_is_one_line_naming_it(tmp_path: Path) -> None:
    """The source, not the store, is what could not be reached: said so, in one line."""
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    uri = f"mongodb://127.0.0.1:{port}/?serverSelectionTimeoutMS=300"
    args = ["import", "eden", "--mongodb-uri", uri, "--db", "eden", "--dry-run"]

    result = runner.invoke(app, args, env=env_of(tmp_path))

    assert result.exit_code == 1, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Eden's MongoDB: "), result.stderr


# ---------------------------------------------------------------- bad input: one line, nothing changed


@pytest.fixture
def seeded(tmp_path: Path) -> dict[str, str]:
    """A store holding agent a1 and one fact, imported from an export file."""
    env = env_of(tmp_path)
    seed = tmp_path / "seed.jsonl"
    seed.write_text("\n".join(export_file(AGENT, fact("f1"))) + "\n")
    ok(runner.invoke(app, ["import", "file", str(seed)], env=env))
    return env


@pytest.mark.parametrize("where", ["missing/dir/x.jsonl", "."], ids=["missing dir", "a dir"])
def test_export_to_a_path_it_cannot_write_is_one_line(
    seeded: dict[str, str], tmp_path: Path, where: str
) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())

    line = one_error_line(runner.invoke(app, ["export", "-o", str(tmp_path / where)], env=seeded))

    assert f"cannot write {tmp_path / where}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary file left


def test_a_failed_export_leaves_the_existing_file_as_it_was(
    seeded: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "previous.jsonl"
    out.write_text("previous export\n")
    out.chmod(0o640)
    broken = {**seeded, "MNEMOS_STORE__SQLITE_PATH": str(tmp_path)}  # a directory: no store

    one_error_line(runner.invoke(app, ["export", "-o", str(out)], env=broken))
    one_error_line(runner.invoke(app, ["export", "--agent", "nope", "-o", str(out)], env=seeded))

    assert out.read_text() == "previous export\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    # A successful export replaces it, keeping its mode.
    ok(runner.invoke(app, ["export", "-o", str(out)], env=seeded))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["type"] == "header" and lines[-1]["counts"] == {"agent": 1, "fact": 1}
    assert out.stat().st_mode & 0o777 == 0o640
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_new_export_file_is_the_owners_only(seeded: dict[str, str], tmp_path: Path) -> None:
    """An export holds a person's messages and memory: not readable by the host's other accounts
    whatever the umask (review H129)."""
    out = tmp_path / "alice.jsonl"
    ok(runner.invoke(app, ["export", "--messages", "-o", str(out)], env=seeded))
    assert out.stat().st_mode & 0o777 == 0o600


def test_export_of_an_unregistered_agent_is_refused(seeded: dict[str, str]) -> None:
    line = one_error_line(runner.invoke(app, ["export", "--agent", "nope"], env=seeded))
    assert line == "error: agent 'nope' is not registered"


def test_import_of_a_file_that_is_not_utf8_is_one_line(
    seeded: dict[str, str], tmp_path: Path
) -> None:
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\x80\x81\n")

    line = one_error_line(runner.invoke(app, ["import", "file", str(binary)], env=seeded))

    assert line.startswith(f"error: cannot read {binary}: ")


def test_import_of_a_bad_header_is_one_line_naming_the_field(
    seeded: dict[str, str], tmp_path: Path
) -> None:
    file = tmp_path / "x.jsonl"
    file.write_text(
        '{"type":"header","format":"mnemos-export","version":1,'
        '"exported_at":"2025-01-01T00:00:00Z","pad":"x"}\n'
    )

    line = one_error_line(runner.invoke(app, ["import", "file", str(file)], env=seeded))

    assert line == (
        "error: export line 1: not a mnemos-export v1/v2/v3/v4 header: "
        "header.pad: Extra inputs are not permitted"
    )


@pytest.mark.parametrize("text", ["", "\n \n"], ids=["empty", "blank lines"])
def test_import_of_an_empty_file_says_it_is_empty(
    seeded: dict[str, str], tmp_path: Path, text: str
) -> None:
    file = tmp_path / "empty.jsonl"
    file.write_text(text)

    line = one_error_line(runner.invoke(app, ["import", "file", str(file)], env=seeded))

    assert "line 0" not in line and "empty" in line


def test_export_to_stdout_by_path_writes_the_pipe_or_appends_the_file(
    seeded: dict[str, str], tmp_path: Path
) -> None:
    """`-o /dev/stdout` is written where the shell points it (review H113): into a pipe it was
    refused (its name resolved to "pipe:[N]", no file), and with `>> log` the log lost what it
    held (replaced by the export). The real command, in a real shell."""
    mnemos = Path(sys.executable).with_name("mnemos")
    env = {**os.environ, **seeded}
    piped = subprocess.run(
        f"'{mnemos}' export -o /dev/stdout | head -1", shell=True, env=env,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert piped.stdout.startswith('{"type":"header"'), piped.stderr
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    subprocess.run(
        f"'{mnemos}' export -o /dev/stdout >> '{log}'", shell=True, env=env, check=True,
        capture_output=True,
    )  # fmt: skip
    lines = log.read_text().splitlines()
    assert lines[0] == "earlier line" and lines[1].startswith('{"type":"header"')


async def test_an_import_bringing_a_forget_says_it_deletes_nothing_already_there(
    tmp_path: Path,
) -> None:
    """A store moved in two files, the backup from before alice was forgotten imported first:
    the forget the newer file brings refuses later imports of her, but what the backup brought
    stays, and the report says so, and how to move without it (h226 D2)."""
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps({"results": ITEMS}))
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump), "--agent", "chef"))
    backup, moved = tmp_path / "backup.jsonl", tmp_path / "moved.jsonl"
    ok(await mnemos(env, "export", "-o", str(backup)))
    forget = ("forget", "--agent", "chef", "--user", "alice", "--keep-executions")
    ok(await mnemos(env, *forget))
    ok(await mnemos(env, "export", "-o", str(moved)))

    copy = env_of(tmp_path, "copy.db")
    first = ok(await mnemos(copy, "import", "file", str(backup))).stdout
    second = ok(await mnemos(copy, "import", "file", str(moved))).stdout

    assert "forget(s)" not in first
    assert "1 forget(s) in the file are new to this store" in second
    assert "newest file first" in second
    kept = rows(tmp_path / "copy.db", "SELECT * FROM facts WHERE user_id = 'alice'")
    assert kept  # what the warning is about
