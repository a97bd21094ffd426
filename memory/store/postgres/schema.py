"""The PostgreSQL schema's versioned migrations (memory.store.postgres.migrations), applied at
start (``migrate``).

Each migration runs once, in order, recorded in schema_migrations, inside one transaction that
holds an advisory lock: workers starting together apply each migration exactly once, and a
failed migration leaves the database at the version before it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from memory.store.postgres.codec import text_columns
from memory.store.postgres.migrations import MIGRATIONS
from memory.store.postgres.pool import Conn
from memory.store.rules.text import CJK_CLASS, KANA_CLASS

LOCK = 0x6D6E656D6F73  # "mnemos": the advisory lock that serialises migrations
_SPLIT_BATCH = 1000


async def _terms_anew(conn: Conn, chars: str) -> None:
    """The text columns (codec.text_columns) of the facts holding a character of the regex class
    ``chars`` computed anew, as the search's query terms are now. Once, in the migration's
    transaction; a fact a process of the previous version writes during a rolling upgrade keeps
    its old terms until it is rewritten."""
    async with conn.cursor(name="facts_anew") as cur:  # server-side: batches, not every row
        await cur.execute("SELECT fact_id, content FROM facts WHERE content ~ %s", (f"[{chars}]",))
        while rows := await cur.fetchmany(_SPLIT_BATCH):
            await conn.cursor().executemany(
                "UPDATE facts SET terms = array_to_tsvector(%(terms)s), "
                "term_count = %(term_count)s, term_repeats = %(term_repeats)s "
                "WHERE fact_id = %(fact_id)s",
                [{"fact_id": row["fact_id"], **text_columns(row["content"])} for row in rows],
            )


# What a migration does in Python after its SQL, in its transaction (version -> step).
async def _split_cjk_terms(conn: Conn) -> None:
    """Migration 19: CJK runs split into bigrams (rules.text.split_cjk)."""
    await _terms_anew(conn, CJK_CLASS)


async def _refold_kana(conn: Conn) -> None:
    """Migration 20: kana keep their voicing (rules.text.fold)."""
    await _terms_anew(conn, KANA_CLASS)


AFTER_MIGRATION: dict[int, Callable[[Conn], Awaitable[None]]] = {
    19: _split_cjk_terms,
    20: _refold_kana,
}

_CREATE_LEDGER = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)
"""


async def migrate(conn: Conn) -> int:
    """Apply the migrations not applied yet; return the schema version."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        await conn.execute(_CREATE_LEDGER)
        cur = await conn.execute("SELECT coalesce(max(version), 0) AS v FROM schema_migrations")
        row = await cur.fetchone()
        current = int(row["v"]) if row else 0
        for version, sql in enumerate(MIGRATIONS, start=1):
            if version > current:
                await conn.execute(sql.encode())
                if (step := AFTER_MIGRATION.get(version)) is not None:
                    await step(conn)
                await conn.execute(
                    "INSERT INTO schema_migrations (version) VALUES (%s)", (version,)
                )
    return len(MIGRATIONS)
