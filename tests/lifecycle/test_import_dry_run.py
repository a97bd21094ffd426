"""`mnemos import … --dry-run` says what the import would do to the store it imports into: what
is already there and what a forget refuses, counted as the import counts them, the store only
read (README "Import"); and the files users have, saved with a UTF-8 BOM, import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.lifecycle.test_import_cli import env_of, mnemos, ok, rows

ITEMS = [
    {
        "id": f"8c2b1f0e-0000-4000-8000-00000000000{i}", "memory": f"{user} fact {i}",
        "user_id": user, "agent_id": "chef", "created_at": "2025-07-20T01:30:00-07:00",
    }
    for i, user in enumerate(["alice", "bob", "alice"])
]  # fmt: skip

STORED = "SELECT fact_id, content, user_id FROM facts ORDER BY fact_id"


def _dump(tmp_path: Path, encoding: str = "utf-8") -> Path:
    dump = tmp_path / "mem0.json"
    dump.write_text(json.dumps(ITEMS), encoding=encoding)
    return dump


def _lines(dry: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(ln["agent_id"], ln["user_id"]): ln for ln in json.loads(dry)["lines"]}


async def test_a_dry_run_after_a_forget_drops_the_forgotten_user_as_the_import_does(
    tmp_path: Path,
) -> None:
    dump = _dump(tmp_path)
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump)))
    ok(await mnemos(env, "forget", "--agent", "chef", "--user", "alice", "--keep-executions"))
    before = rows(tmp_path / "mnemos.db", STORED)

    dry = ok(await mnemos(env, "import", "mem0", str(dump), "--dry-run", "--json")).stdout
    text = ok(await mnemos(env, "import", "mem0", str(dump), "--dry-run")).stdout

    assert rows(tmp_path / "mnemos.db", STORED) == before  # the dry run changed nothing
    real = json.loads(ok(await mnemos(env, "import", "mem0", str(dump), "--json")).stdout)
    assert real["counts"]["facts"] | {"buffered": {}} == {
        "inserted": 0, "existing": 1, "duplicate": 0, "conflict": 0, "forgotten": 2,
        "buffered": {},
    }  # fmt: skip
    lines = _lines(dry)
    assert lines["chef", "alice"]["facts"] == 0
    assert lines["chef", "alice"]["dropped"] == {"forgotten user": 2}
    assert lines["chef", "bob"]["dropped"] == {"already there": 1}
    assert "drop 2: forgotten user" in text and "total: 0 to import, 3 dropped" in text


async def test_a_dry_run_again_after_an_import_says_everything_is_already_there(
    tmp_path: Path,
) -> None:
    env = env_of(tmp_path)
    out = tmp_path / "export.jsonl"
    ok(await mnemos(env, "import", "mem0", str(_dump(tmp_path))))
    ok(await mnemos(env, "export", "--messages", "-o", str(out)))

    dry = ok(await mnemos(env, "import", "file", str(out), "--dry-run", "--json")).stdout

    lines = _lines(dry)
    assert lines["chef", "alice"]["facts"] == 0 and lines["chef", "bob"]["facts"] == 0
    assert lines["chef", "alice"]["dropped"] == {"already there": 2}
    assert json.loads(dry)["store_exists"] is True


async def test_a_dry_run_into_no_store_says_so_and_creates_none(tmp_path: Path) -> None:
    dump = _dump(tmp_path)

    text = ok(await mnemos(env_of(tmp_path), "import", "mem0", str(dump), "--dry-run")).stdout

    assert text.startswith(f"no store at {tmp_path / 'mnemos.db'} yet")
    assert "total: 3 to import, 0 dropped" in text
    assert not (tmp_path / "mnemos.db").exists()


async def test_a_mem0_dump_saved_with_a_bom_imports(tmp_path: Path) -> None:
    """As Notepad or PowerShell save it: a byte-order mark before the JSON."""
    dump = _dump(tmp_path, encoding="utf-8-sig")

    result = await mnemos(env_of(tmp_path), "import", "mem0", str(dump))

    assert result.exit_code == 0, result.stderr
    assert len(rows(tmp_path / "mnemos.db", STORED)) == 3


async def test_an_export_file_saved_with_a_bom_imports(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    out = tmp_path / "export.jsonl"
    ok(await mnemos(env, "import", "mem0", str(_dump(tmp_path))))
    ok(await mnemos(env, "export", "-o", str(out)))
    out.write_text(out.read_text(encoding="utf-8"), encoding="utf-8-sig")

    result = await mnemos(env_of(tmp_path, "copy.db"), "import", "file", str(out))

    assert result.exit_code == 0, result.stderr
    assert rows(tmp_path / "copy.db", STORED) == rows(tmp_path / "mnemos.db", STORED)


async def test_a_dry_run_leaves_a_store_at_an_older_schema_as_it_is_and_says_so(
    tmp_path: Path,
) -> None:
    """A newer CLI's dry run while the previous version's fleet uses the store: no migration
    (schema_version, trigger), the file's plan printed, and why the store was not read."""
    import sqlite3

    from memory.store.sqlite.schema import SCHEMA_VERSION

    dump = _dump(tmp_path)
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump)))
    db = tmp_path / "mnemos.db"
    old = str(SCHEMA_VERSION - 1)
    with sqlite3.connect(db) as c:  # the store as the previous version left it
        c.execute("DROP TRIGGER facts_inserted_at")
        c.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (old,))
    schema = "SELECT name FROM sqlite_master ORDER BY name"
    before = rows(db, schema)

    text = ok(await mnemos(env, "import", "mem0", str(dump), "--dry-run")).stdout
    dry = json.loads(
        ok(await mnemos(env, "import", "mem0", str(dump), "--dry-run", "--json")).stdout
    )

    assert rows(db, "SELECT value FROM meta WHERE key = 'schema_version'") == [(old,)]
    assert rows(db, schema) == before  # no trigger, table or index added
    said = f"the store is at schema {old}, this CLI reads {SCHEMA_VERSION}"
    assert said in text and "`mnemos setup` upgrades it" in text
    assert dry["store_not_read"].startswith(said)
    assert "total: 3 to import, 0 dropped" in text  # the file's plan, the store unread


async def test_a_dry_run_reads_an_up_to_date_store_without_a_note(tmp_path: Path) -> None:
    dump = _dump(tmp_path)
    env = env_of(tmp_path)
    ok(await mnemos(env, "import", "mem0", str(dump)))
    dry = json.loads(
        ok(await mnemos(env, "import", "mem0", str(dump), "--dry-run", "--json")).stdout
    )
    assert dry["store_not_read"] is None
    assert sum(ln["facts"] for ln in dry["lines"]) == 0  # read: everything already there
