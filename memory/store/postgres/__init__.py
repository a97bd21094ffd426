"""The PostgreSQL + pgvector backend."""

from memory.store.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
