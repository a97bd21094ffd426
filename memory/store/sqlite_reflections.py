"""commit_consolidation of the SQLite backend: the body of one BEGIN IMMEDIATE transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from memory.errors import ConflictError
from memory.models import ConsolidatedMemory
from memory.store.sqlite_codec import to_us
from memory.store.sqlite_meta import bump_version, chunks, marks


def commit_consolidation_tx(
    conn: sqlite3.Connection, blob: ConsolidatedMemory, absorbed_ids: Sequence[str]
) -> ConsolidatedMemory:
    """Write ``blob`` (at version n) if the stored one is at n - 1, and mark the reflections
    absorbed into it; ConflictError, with nothing written, otherwise."""
    key = blob.scope_key
    expected = blob.version - 1
    row = conn.execute(
        "SELECT version FROM consolidated WHERE scope_key = ?", (key.key,)
    ).fetchone()
    current = 0 if row is None else int(row["version"])
    if current != expected:
        raise ConflictError(f"{key.key} is at version {current}, not {expected}")
    buffered = 0
    for chunk in chunks(absorbed_ids):
        buffered += conn.execute(
            "SELECT count(*) FROM reflections WHERE scope_key = ? "
            f"AND absorbed_into_version IS NULL AND reflection_id IN ({marks(chunk)})",
            (key.key, *chunk),
        ).fetchone()[0]
    if buffered != len(absorbed_ids):
        raise ConflictError(
            f"{len(absorbed_ids) - buffered} reflection(s) of {key.key} already absorbed or unknown"
        )
    conn.execute(
        """
        INSERT INTO consolidated (scope_key, scope, agent_id, user_id, session_id,
            content, version, word_limit, updated_at, edited_by)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (scope_key) DO UPDATE SET content = excluded.content,
            version = excluded.version, word_limit = excluded.word_limit,
            updated_at = excluded.updated_at, edited_by = excluded.edited_by
        """,
        (
            key.key, key.scope, key.agent_id, key.user_id, key.session_id, blob.content,
            blob.version, blob.word_limit, to_us(blob.updated_at), blob.edited_by,
        ),
    )  # fmt: skip
    for chunk in chunks(absorbed_ids):
        conn.execute(
            "UPDATE reflections SET absorbed_into_version = ? "
            f"WHERE reflection_id IN ({marks(chunk)})",
            (blob.version, *chunk),
        )
    bump_version(conn, key.key)
    return blob
