"""The store contract and a factory that opens the configured backend."""

from __future__ import annotations

from memory.errors import NotFoundError
from memory.settings import Settings
from memory.store.base import MemoryStore

__all__ = ["MemoryStore", "open_store"]


async def open_store(settings: Settings, *, create: bool = True) -> MemoryStore:
    """Open (and set up, idempotently) the backend named by settings.store.backend.

    ``create=False`` for a command that only reads or edits what is there: a SQLite file that
    does not exist is then a NotFoundError naming the path, not a new empty store left at a
    mistyped one (a server store's database is the server's to make)."""
    cfg = settings.store
    store: MemoryStore
    if cfg.backend == "sqlite":
        from memory.store.sqlite import SQLiteStore

        if not create and not cfg.sqlite_path.exists():
            raise NotFoundError(
                f"no memory store at {cfg.sqlite_path} (MNEMOS_STORE__SQLITE_PATH): the worker, "
                "`mnemos setup` or `mnemos import` creates it"
            )
        cfg.sqlite_path.parent.mkdir(parents=True, exist_ok=True)
        store = SQLiteStore(cfg.sqlite_path)
    elif cfg.backend == "postgres":
        from memory.store.postgres import PostgresStore

        assert cfg.postgres_dsn is not None  # enforced by Settings validation
        store = PostgresStore(
            cfg.postgres_dsn.get_secret_value(),
            pool_size=cfg.postgres_pool_size,
            ef_search=cfg.hnsw_ef_search,
        )
    else:
        from memory.store.mongo import MongoStore

        assert cfg.mongodb_uri is not None  # enforced by Settings validation
        store = MongoStore.from_uri(
            cfg.mongodb_uri.get_secret_value(),
            database=cfg.mongodb_database,
            atlas_search=cfg.atlas_search,
        )
    await store.setup()
    return store
