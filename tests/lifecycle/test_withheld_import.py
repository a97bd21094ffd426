"""A forget under one agent of a shared session keeps the user's messages for the others,
withheld from that agent (memory/store/rules/withheld.py). An export carries the marks
(``withheld_from``), so that importing it (a migration, a restore) gives that agent the same
memory context: not the user's messages, nor the user among its participants. Exported from
each backend into SQLite, and from SQLite into each backend."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory.lifecycle.exporting import export_store
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.lifecycle.test_import_guards import NOW, export_file, export_lines, import_lines
from tests.store.builders import at, msg, record

View = tuple[tuple[str, ...], list[str]]


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    store = SQLiteStore(tmp_path / "other.db")
    await store.setup()
    try:
        yield store
    finally:
        await store.close()


async def forgotten_under_a2(store: MemoryStore) -> None:
    """g1: a1 records u1; a2 records u2, then u1. u1 forgotten under a2: the message a1
    recorded stays for a1, withheld from a2; the one a2 recorded goes."""
    await record(
        store, "g1", "a1", [msg("g1", "u1 to a1: I take insulin", user_id="u1", seconds=1)]
    )
    await record(store, "g1", "a2", [
        msg("g2", "u2 to a2", user_id="u2", seconds=2),
        msg("g3", "u1 to a2: I live in Lisbon", user_id="u1", seconds=3),
    ])  # fmt: skip
    await store.forget_user("u1", agent_id="a2", at=at(10))


async def view(store: MemoryStore, agent: str) -> View:
    """The agent's participants of g1 and the messages its export holds."""
    session = await store.get_session("g1", agent)
    assert session is not None
    out = io.StringIO()
    await export_store(store, out, agent_id=agent, user_id=None, messages=True, now=NOW)
    said = [r["content"] for r in map(json.loads, out.getvalue().splitlines()) if r["type"] == "message"]  # fmt: skip
    return session.user_ids, said


A2: View = (("u2",), ["u2 to a2"])  # a2's, once u1 is forgotten under it


async def views(store: MemoryStore) -> tuple[View, View]:
    return await view(store, "a1"), await view(store, "a2")


def messages_of(lines: list[str]) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, lines) if r["type"] == "message"]


def without_marks(lines: list[str]) -> list[str]:
    """The same file as written before withheld_from was (a file from an older mnemos)."""
    records = [r for r in map(json.loads, lines) if r["type"] not in ("header", "end")]
    return export_file(*({k: v for k, v in r.items() if k != "withheld_from"} for r in records))


async def test_the_export_names_the_agents_a_message_is_withheld_from(store: MemoryStore) -> None:
    await forgotten_under_a2(store)

    lines = await export_lines(store)

    marks = {m["message_id"]: m["withheld_from"] for m in messages_of(lines)}
    # g3, which a2 recorded, stays for a1 too: a1 has not formed it yet (rules.withheld).
    assert marks == {"g1": ["a2"], "g2": [], "g3": ["a2"]}


async def test_a_forget_under_one_agent_survives_an_export_imported_elsewhere(
    store: MemoryStore, sqlite: MemoryStore
) -> None:
    await forgotten_under_a2(store)
    before = await views(store)
    assert before[1] == A2

    await import_lines(sqlite, await export_lines(store))

    assert await views(sqlite) == before


async def test_an_import_into_an_empty_store_withholds_what_the_file_says(
    store: MemoryStore, sqlite: MemoryStore
) -> None:
    await forgotten_under_a2(sqlite)
    before = await views(sqlite)
    assert before[1] == A2

    await import_lines(store, await export_lines(sqlite))

    assert await views(store) == before


async def test_an_older_file_without_the_marks_weakens_none(
    store: MemoryStore, sqlite: MemoryStore
) -> None:
    await forgotten_under_a2(sqlite)
    before = await views(sqlite)
    lines = await export_lines(sqlite)
    await import_lines(store, lines)

    await import_lines(store, without_marks(lines))

    assert await views(store) == before


async def test_a_file_with_the_marks_withholds_again_what_an_older_one_imported(
    store: MemoryStore, sqlite: MemoryStore
) -> None:
    await forgotten_under_a2(sqlite)
    before = await views(sqlite)
    lines = await export_lines(sqlite)
    await import_lines(store, without_marks(lines))  # as imported before the marks were kept
    assert await view(store, "a2") != A2

    report = await import_lines(store, lines)

    assert report.counts["messages"].inserted == 0
    assert await views(store) == before
