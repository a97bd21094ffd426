"""Latency of the memory context on SQLite (or PostgreSQL, MongoDB: --backend) with 10k facts: assembled every time, and cached.

One agent with 10,000 facts (agent- and user-scoped, updated over the last 30 days, so the FIFO
reads the newest 40 of the last 7 days), full consolidated blobs for the agent (1,200 words), the
user (300) and the session (200), and 10 unabsorbed reflections in each scope: everything the
context shows is there.

Run: ``.venv/bin/python bench/context.py [--runs 1000] [--facts 10000] [--backend sqlite|postgres|mongo]``. The last line is one JSON object.
postgres: POSTGRES_DSN, else a throwaway embedded server; mongo: MONGODB_URI, else mongoeco, an
in-memory Python emulation of the wire protocol in this process (tests/mongo_server.py): its
latencies are the emulation's, not a MongoDB server's, and it is slow (``--facts 5000 --runs 200``
takes ~10 min there; below ~4000 facts no commit falls in the last 7 days and the FIFO is empty).
Goals: p99 ≤ 2 ms cached, ≤ 15 ms uncached.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

# Run as a script (``python bench/x.py``): the repository root goes on the path for ``bench``.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import BACKEND_HELP, BACKENDS, BulkLoad, bench_store  # noqa: E402
from memory.context import assemble_context  # noqa: E402
from memory.context_cache import ContextCache  # noqa: E402
from memory.formation_commit import FactAdd, FormationCommit  # noqa: E402
from memory.models import AgentConfig, MessageIn, Reflection, ScopeKey, SessionInfo  # noqa: E402
from memory.settings import Settings  # noqa: E402
from memory.store.base import MemoryStore  # noqa: E402

FACTS = 10_000
BATCH = 500
DIMENSION = 384
NOW = datetime(2025, 6, 1, tzinfo=UTC)
AGENT = AgentConfig(agent_id="bench-agent", name="Bench")
USER = "bench-user"
SESSION = SessionInfo(session_id="bench-session", user_ids=(USER,), created_at=NOW)
KEYS = (
    (ScopeKey.agent(AGENT.agent_id), 1200),
    (ScopeKey.user(AGENT.agent_id, USER), 300),
    (ScopeKey.session(AGENT.agent_id, SESSION.session_id), 200),
)
_WORDS = (
    "project budget deadline alice prefers concise answers mars festival phase venue tickets "
    "design review api endpoint staging deploy weekly meeting coffee berlin travel invoice"
)


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(_WORDS.split(), k=count))


async def fill(
    store: MemoryStore, rng: random.Random, facts: int, bulk: BulkLoad | None = None
) -> None:
    await store.upsert_agent(AGENT)
    loader = "bench-load"
    message = MessageIn(message_id="m1", role="user", content="load", created_at=NOW, user_id=USER)
    await store.record_messages(
        loader, AGENT.agent_id, [message], weights={}, chars_per_token=4.0, now=NOW
    )
    vectors = np.random.default_rng(1).standard_normal((facts, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for start in range(0, facts, BATCH):
        ops = []
        for i in range(start, min(start + BATCH, facts)):
            user = i % 2 == 0
            ops.append(
                FactAdd(
                    fact_id=f"f{i}", scope="user" if user else "agent",
                    user_id=USER if user else None,
                    content=f"Fact {i}: {words(rng, rng.randint(6, 25))}",
                    embedding=vectors[i].tolist(),
                )
            )  # fmt: skip
        # Commits spread over the last 30 days, oldest first.
        when = NOW - timedelta(days=30) * (1 - start / facts)
        await store.commit_formation(
            FormationCommit(
                formation_id=f"bench-{start}", session_id=loader, agent_id=AGENT.agent_id,
                expected_cursor=0, new_cursor=0, embedding_model="bench-random-384",
                fact_ops=ops, committed_at=when,
            )
        )  # fmt: skip
        if start == 0 and bulk is not None:
            await bulk.drop_index(DIMENSION)  # the first commit made it
    reflections = [
        Reflection(
            reflection_id=f"r-{key.scope}-{i}", scope_key=key, content=words(rng, 30),
            source_session_id=loader, formed_at=NOW - timedelta(minutes=i),
        )
        for key, _ in KEYS
        for i in range(10)
    ]  # fmt: skip
    await store.commit_formation(
        FormationCommit(
            formation_id="bench-reflections", session_id=loader, agent_id=AGENT.agent_id,
            expected_cursor=0, new_cursor=0, embedding_model="bench-random-384",
            reflections=reflections, committed_at=NOW,
        )
    )  # fmt: skip
    for key, word_limit in KEYS:
        await store.commit_consolidation(
            key, expected_version=0, content=f"VERSION: 1\n{words(rng, word_limit)}",
            word_limit=word_limit, absorbed_ids=[], at=NOW,
        )  # fmt: skip


async def timed(call: Callable[[], Awaitable[str]], runs: int) -> dict[str, float]:
    for _ in range(20):
        await call()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(samples, n=100)
    return {"p50_ms": round(cuts[49], 3), "p99_ms": round(cuts[98], 3)}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--facts", type=int, default=FACTS)
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite", help=BACKEND_HELP)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        async with bench_store(args.backend, Path(tmp), "context") as store:
            figures = await measure(store, args.facts, args.runs)
    figures["backend"] = args.backend
    print(f"uncached {figures['uncached']}, cached {figures['cached']}")
    print(json.dumps(figures))


async def measure(store: MemoryStore, facts: int, runs: int) -> dict[str, object]:
    settings = Settings()
    bulk = BulkLoad(store)
    await fill(store, random.Random(7), facts, bulk)
    await bulk.build_index(DIMENSION)

    def uncached() -> Awaitable[str]:
        return assemble_context(
            store, settings, agent=AGENT, session=SESSION, user_id=USER, now=NOW
        )

    cache = ContextCache()

    def cached() -> Awaitable[str]:
        return cache.get(store, settings, agent=AGENT, session=SESSION, user_id=USER, now=NOW)

    xml = await uncached()
    figures: dict[str, object] = {
        "facts": facts,
        "context_chars": len(xml),
        "fifo_facts": xml.count("\n- ["),
        "uncached": await timed(uncached, runs),
        "cached": await timed(cached, runs),
    }
    figures["cache_hits_misses"] = [cache.hits, cache.misses]
    return figures


if __name__ == "__main__":
    asyncio.run(main())
