"""The store contract and a factory that opens the configured backend."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from memory.errors import MnemosError, NotFoundError
from memory.settings import Settings
from memory.store.base import MemoryStore

__all__ = ["MemoryStore", "SchemaMismatchError", "open_store"]


class SchemaMismatchError(MnemosError):
    """The store's schema is not the one this code reads; ``open_store(setup=False)`` only reads,
    so it says so instead of migrating (``mnemos setup`` migrates)."""

    def __init__(self, stored: int, reads: int) -> None:
        super().__init__(f"the store is at schema {stored}, this mnemos reads {reads}")
        self.stored = stored
        self.reads = reads


def _sqlite_version(path: Path) -> int:
    """The schema_version a SQLite file's meta records (0: none), read on a read-only
    connection: reading it changes nothing in the file."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as conn:
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.OperationalError:  # no meta table: a file no setup has run on
            return 0
    return int(row[0]) if row else 0


async def _postgres_version(dsn: str) -> int:
    """The last migration schema_migrations records (0: none)."""
    from memory.store.postgres.pool import connect

    conn = await connect(dsn)
    try:
        cur = await conn.execute(
            "SELECT CASE WHEN to_regclass('schema_migrations') IS NULL THEN 0 "
            "ELSE (SELECT coalesce(max(version), 0) FROM schema_migrations) END AS v"
        )
        row = await cur.fetchone()
        return int(row["v"]) if row else 0
    finally:
        await conn.close()


def _check(stored: int, reads: int) -> None:
    if stored != reads:
        raise SchemaMismatchError(stored, reads)


async def open_store(settings: Settings, *, create: bool = True, setup: bool = True) -> MemoryStore:
    """Open (and set up, idempotently) the backend named by settings.store.backend.

    ``create=False`` for a command that only reads or edits what is there: a SQLite file that
    does not exist is then a NotFoundError naming the path, not a new empty store left at a
    mistyped one (a server store's database is the server's to make).

    ``setup=False`` (implies ``create=False``) for a read that must change nothing, not even the
    schema (a dry run by a newer CLI while an older fleet uses the store): no setup, and a
    store whose schema is not the one this code reads is a SchemaMismatchError. MongoDB has no
    schema version: it is opened without its index builds and data migrations."""
    create = create and setup
    cfg = settings.store
    store: MemoryStore
    if cfg.backend == "sqlite":
        from memory.store.sqlite import SQLiteStore

        if not create and not cfg.sqlite_path.exists():
            raise NotFoundError(
                f"no memory store at {cfg.sqlite_path} (MNEMOS_STORE__SQLITE_PATH): the worker, "
                "`mnemos setup` or `mnemos import` creates it"
            )
        if not setup:
            from memory.store.sqlite.schema import SCHEMA_VERSION

            _check(_sqlite_version(cfg.sqlite_path), SCHEMA_VERSION)
        cfg.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(cfg.sqlite_path)
    elif cfg.backend == "postgres":
        from memory.store.postgres import PostgresStore

        assert cfg.postgres_dsn is not None  # enforced by Settings validation
        dsn = cfg.postgres_dsn.get_secret_value()
        pg = PostgresStore(dsn, pool_size=cfg.postgres_pool_size, ef_search=cfg.hnsw_ef_search)
        if not setup:
            from memory.store.postgres.migrations import MIGRATIONS

            _check(await _postgres_version(dsn), len(MIGRATIONS))
            # setup() opens the pool after migrating; without it, the pool alone.
            await pg._open_pool()
            return pg
        store = pg
    else:
        from memory.store.mongo import MongoStore

        assert cfg.mongodb_uri is not None  # enforced by Settings validation
        store = MongoStore.from_uri(
            cfg.mongodb_uri.get_secret_value(),
            database=cfg.mongodb_database,
            atlas_search=cfg.atlas_search,
        )
    if setup:
        await store.setup()
    return store
