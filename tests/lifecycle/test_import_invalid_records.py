"""A `mnemos export` file whose lines parse but whose records the import refuses (a user-scope
fact without a user, a negative version or count): the reader names the line, as it does for a
line that does not parse, and nothing is imported (library and CLI, --dry-run too)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli import common as cli_common
from cli.app import app
from memory.lifecycle.export import ExportFormatError, read_export, to_import
from memory.logging import configure_logging
from tests.lifecycle.test_import_cli import env_of, rows
from tests.lifecycle.test_import_guards import AGENT, export_file, fact
from tests.store.builders import USER_KEY, at

runner = CliRunner()

BLOB = {
    "type": "consolidated", "scope_key": USER_KEY.model_dump(), "content": "Likes tea",
    "version": 1, "word_limit": 100, "updated_at": at(10),
}  # fmt: skip

BAD: dict[str, dict[str, Any]] = {
    "user fact without a user": fact("f9", user_id=None),
    "agent fact with a user": fact("f9", scope="agent"),
    "negative version": fact("f9", version=-1),
    "negative access count": fact("f9", access_count=-1),
    "negative word limit": {**BLOB, "word_limit": -1},
}


@pytest.fixture(autouse=True)
def _logging_outside_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    configure_logging("warning")
    monkeypatch.setattr(cli_common, "configure_logging", lambda level: None)


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_the_reader_names_the_line_of_a_record_the_import_refuses(bad: dict[str, Any]) -> None:
    lines = export_file(AGENT, fact("f1"), bad)  # the header is line 1: the bad record line 4

    with pytest.raises(ExportFormatError, match=r"^export line 4: ") as e:
        to_import(read_export(lines))
    assert e.value.line_no == 4


@pytest.mark.parametrize("dry_run", [False, True], ids=["import", "dry run"])
@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
async def test_the_cli_says_which_line_and_imports_nothing(
    tmp_path: Path, bad: dict[str, Any], dry_run: bool
) -> None:
    file = tmp_path / "export.jsonl"
    file.write_text("\n".join(export_file(AGENT, fact("f1"), bad)) + "\n")
    args = ["import", "file", str(file), *(["--dry-run"] if dry_run else [])]

    result = await asyncio.to_thread(runner.invoke, app, args, env=env_of(tmp_path))

    # A clear error, not a traceback: the command exits (typer.Exit), raising nothing else.
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 1
    assert "export line 4: " in result.stderr
    db = tmp_path / "mnemos.db"
    assert not db.exists() or rows(db, "SELECT fact_id FROM facts") == []
