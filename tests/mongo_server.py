"""A MongoDB server for the tests: the one named by MONGODB_URI, else mongoeco in this process.

mongoeco (PyPI) serves the MongoDB wire protocol from an in-memory engine, so the store is tested
through the real pymongo driver over loopback. It cannot create Atlas Search indexes over the
wire; ``EcoServer.create_search_indexes`` creates them directly in its engine.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mongoeco import AsyncMongoClient as EcoClient
from mongoeco import SearchIndexModel as EcoSearchIndexModel
from mongoeco.engines import MemoryEngine
from mongoeco.wire.proxy import AsyncMongoEcoProxyServer

from memory.store.mongo.indexes import SearchIndexSpec, plan_search_indexes, search_index_specs


def search_index_specs_without_filters(dimension: int) -> list[SearchIndexSpec]:
    """The store's Atlas Search definitions (mongo.indexes) minus the vector "filter" fields,
    which mongoeco rejects (its $vectorSearch filters on any field anyway)."""
    stripped: list[SearchIndexSpec] = []
    for spec in search_index_specs(dimension):
        definition = spec.definition
        if spec.type == "vectorSearch":
            fields = [f for f in definition["fields"] if f["type"] != "filter"]
            definition = {**definition, "fields": fields}
        stripped.append(SearchIndexSpec(spec.name, spec.type, definition))
    return stripped


@dataclass(frozen=True)
class EcoServer:
    uri: str
    engine_client: EcoClient  # mongoeco's own client on the engine the server serves

    async def create_search_indexes(self, database: str, dimension: int) -> list[str]:
        """Create or update the store's search indexes (minus the vector filter fields, which
        mongoeco rejects) in the server's engine; return the names changed."""
        facts = self.engine_client[database]["facts"]
        existing = await facts.list_search_indexes().to_list()
        create, update = plan_search_indexes(
            existing, search_index_specs_without_filters(dimension)
        )
        for spec in create:
            model = EcoSearchIndexModel(spec.definition, name=spec.name, type=spec.type)
            await facts.create_search_index(model)
        for spec in update:
            await facts.update_search_index(spec.name, spec.definition)
        return [spec.name for spec in create + update]


@asynccontextmanager
async def running_mongoeco() -> AsyncIterator[EcoServer]:
    """mongoeco's wire server on a free loopback port, stopped on exit."""
    # A server given a client leaves it to its owner: this block opens and closes it.
    async with EcoClient(MemoryEngine()) as engine_client:
        server = AsyncMongoEcoProxyServer(client=engine_client, host="127.0.0.1", port=0)
        address = await server.start()
        try:
            yield EcoServer(uri=address.uri, engine_client=engine_client)
        finally:
            await server.close()


@asynccontextmanager
async def running_mongo() -> AsyncIterator[str]:
    """MONGODB_URI when set (a real server or Atlas), else a mongoeco server's URI."""
    uri = os.environ.get("MONGODB_URI")
    if uri:
        yield uri
        return
    async with running_mongoeco() as server:
        yield server.uri
