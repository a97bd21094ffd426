"""The embedded backend: one SQLite file (see store)."""

from memory.store.sqlite.store import SQLiteStore

__all__ = ["SQLiteStore"]
