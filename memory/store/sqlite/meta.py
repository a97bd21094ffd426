"""Small shared pieces of the SQLite backend: change counters, the embedding meta, IN lists."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence

# Well under SQLite's limit on bound parameters per statement.
_CHUNK = 500


def chunks[T](items: Sequence[T]) -> Iterator[Sequence[T]]:
    """Slices of at most _CHUNK items: one IN (...) list each."""
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def marks(items: Sequence[object]) -> str:
    """The placeholders of an IN list: '?, ?, ?'."""
    return ", ".join("?" * len(items))


def rows_in(
    conn: sqlite3.Connection, sql: str, values: Sequence[object], *first: object
) -> list[sqlite3.Row]:
    """The rows of ``sql`` (ending in ``IN``) for every value, in IN lists of at most _CHUNK;
    ``first`` are the parameters before the list."""
    rows: list[sqlite3.Row] = []
    for chunk in chunks(values):
        rows += conn.execute(f"{sql} ({marks(chunk)})", (*first, *chunk)).fetchall()
    return rows


_BUMP = (
    "INSERT INTO scope_versions (key, version) VALUES (?, 1) "
    "ON CONFLICT (key) DO UPDATE SET version = version + 1 RETURNING version"
)


def bump_version(conn: sqlite3.Connection, key: str) -> int:
    """Increment one change counter (created at 1) and return its new value."""
    row = conn.execute(_BUMP, (key,)).fetchone()
    return int(row[0])


def read_embedding_meta(conn: sqlite3.Connection) -> tuple[str, int] | None:
    rows = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')"
        ).fetchall()
    )
    if len(rows) < 2:
        return None
    return str(rows["embedding_model"]), int(rows["embedding_dimension"])
