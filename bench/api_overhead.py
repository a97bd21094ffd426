"""What the HTTP API adds to the client: p50/p99 of the memory context and of search_facts,
called directly on the client, through the app in-process (httpx's ASGI transport: routing,
validation, keys, JSON) and through uvicorn on a loopback port (plus the HTTP stack).

One agent with 1,000 facts (word-hash embeddings, so the figures measure the service, not a
model), a consolidated agent blob, one session with one user. Both paths share the client's
context cache, as a deployed service does. Needs no Temporal server (neither call starts a
workflow); the client gets an unconnected one.

Run: ``.venv/bin/python bench/api_overhead.py [--runs 300]``. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import uvicorn  # noqa: E402
from temporalio.client import Client  # noqa: E402

from client.memory_client import MemoryClient  # noqa: E402
from memory.formation_commit import FactAdd, FormationCommit  # noqa: E402
from memory.models import AgentConfig, MessageIn, ScopeKey  # noqa: E402
from memory.settings import Settings, StoreSettings  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402
from serve.app import create_app  # noqa: E402
from serve.keys import StoreKeyStore  # noqa: E402
from tests.fakes import WordHashEmbedder  # noqa: E402

FACTS = 1000
AGENT, USER, SESSION = "bench", "alice", "s1"
TOPICS = "tea coffee cello berlin rome budget deadline venue tickets invoice travel design"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def seed(store: SQLiteStore, embedder: WordHashEmbedder) -> None:
    now = datetime.now(UTC)
    await store.upsert_agent(AgentConfig(agent_id=AGENT, name="Bench"))
    message = MessageIn(message_id="m1", role="user", content="hi", created_at=now, user_id=USER)
    await store.record_messages(
        SESSION, AGENT, [message], weights={"user": 1.0}, chars_per_token=4, now=now
    )
    words = TOPICS.split()
    texts = [
        f"{USER} mentioned {words[i % len(words)]} and {words[(i * 7) % len(words)]} item {i}"
        for i in range(FACTS)
    ]
    batch = await embedder.embed(texts)
    ops = [
        FactAdd(
            fact_id=f"f{i}",
            scope="user" if i % 3 else "agent",
            user_id=USER if i % 3 else None,
            content=text,
            embedding=[float(x) for x in vector],
        )
        for i, (text, vector) in enumerate(zip(texts, batch.vectors, strict=True))
    ]
    await store.commit_formation(
        FormationCommit(
            formation_id="bench-seed",
            session_id=SESSION,
            agent_id=AGENT,
            expected_cursor=0,
            new_cursor=1,
            embedding_model=batch.model,
            fact_ops=ops,
            committed_at=now,
        )
    )
    await store.commit_consolidation(
        ScopeKey(scope="agent", agent_id=AGENT),
        expected_version=0,
        content="VERSION: 1\n" + "Bench agent keeps notes about travel and budgets. " * 20,
        word_limit=1200,
        absorbed_ids=[],
        at=now,
    )


async def timed(call: Callable[[], Awaitable[Any]], runs: int) -> dict[str, float]:
    for _ in range(min(20, runs)):  # warm-up: caches, connections, first embedding
        await call()
    took: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        took.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": round(percentile(took, 0.5), 3), "p99_ms": round(percentile(took, 0.99), 3)}


async def main(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "mnemos.db"
        settings = Settings(store=StoreSettings(sqlite_path=db))
        store = SQLiteStore(db)
        await store.setup()
        embedder = WordHashEmbedder()
        await seed(store, embedder)
        temporal = await Client.connect("127.0.0.1:1", lazy=True)  # never called here
        memory = MemoryClient(temporal, store, settings, embedder=embedder)
        keys = StoreKeyStore(store)  # the default of mnemos serve: a store read per request
        _, token = await keys.create([AGENT])
        app = create_app(memory, keys)
        headers = {"Authorization": f"Bearer {token}"}
        query = {"queries": [f"{USER} mentioned tea and berlin"], "user_id": USER}
        context_path = f"/v1/agents/{AGENT}/sessions/{SESSION}/context"

        async def http_calls(c: httpx.AsyncClient) -> dict[str, dict[str, float]]:
            async def context() -> None:
                r = await c.get(context_path, params={"user_id": USER})
                r.raise_for_status()

            async def search() -> None:
                r = await c.post(f"/v1/agents/{AGENT}/search", json=query)
                r.raise_for_status()

            return {"context": await timed(context, runs), "search": await timed(search, runs)}

        direct = {
            "context": await timed(
                lambda: memory.memory_context(AGENT, SESSION, user_id=USER), runs
            ),
            "search": await timed(
                lambda: memory.search_facts(AGENT, query["queries"], user_id=USER), runs
            ),
        }
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=headers
        ) as c:
            asgi = await http_calls(c)

        sock = socket.socket()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(
            uvicorn.Config(app, log_config=None, access_log=False, lifespan="off")
        )
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        try:
            async with httpx.AsyncClient(base_url=base, headers=headers) as c:
                loopback = await http_calls(c)
        finally:
            server.should_exit = True
            await serving
            sock.close()
        await store.close()
    return {"facts": FACTS, "runs": runs, "direct": direct, "asgi": asgi, "http": loopback}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=300)
    result = asyncio.run(main(parser.parse_args().runs))
    print(f"{'':10}{'context p50/p99 ms':>24}{'search p50/p99 ms':>24}")
    for name in ("direct", "asgi", "http"):
        row = result[name]
        cells = [f"{row[k]['p50_ms']:.2f} / {row[k]['p99_ms']:.2f}" for k in ("context", "search")]
        print(f"{name:10}{cells[0]:>24}{cells[1]:>24}")
    print(json.dumps(result))
