"""Speed of the local MiniLM embedder: load time, single-query latency, batch throughput.

Run: ``.venv/bin/python bench/embedding.py``. The last line is one JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time

from memory.embedding.local import MODEL, LocalMiniLMEmbedder

QUERIES = 200
BATCH_TEXTS = 512
_WORDS = [
    *("user", "prefers", "dark", "mode", "alice", "email", "project", "deadline", "friday"),
    *("meeting", "moved", "budget", "approved", "the", "team", "deployment", "failed", "because"),
    *("database", "backup", "every", "night", "travel", "berlin", "summer", "allergic", "peanuts"),
    *("coffee", "morning", "reminder", "invoice", "customer", "support", "ticket", "priority"),
]


def sentences(count: int, seed: int) -> list[str]:
    """Chat-like sentences of 6 to 30 words, reproducible from the seed."""
    rng = random.Random(seed)
    return [" ".join(rng.choices(_WORDS, k=rng.randint(6, 30))) + "." for _ in range(count)]


async def measure(threads: int) -> dict[str, float]:
    embedder = LocalMiniLMEmbedder(threads=threads)
    started = time.perf_counter()
    await embedder.load()
    load_s = time.perf_counter() - started

    queries = sentences(QUERIES, seed=1)
    await embedder.embed(queries[:5])  # warm-up: first runs allocate onnxruntime's buffers
    latencies_ms = []
    for query in queries:
        started = time.perf_counter()
        await embedder.embed([query])
        latencies_ms.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(latencies_ms, n=100)

    texts = sentences(BATCH_TEXTS, seed=2)
    started = time.perf_counter()
    await embedder.embed(texts)
    throughput = BATCH_TEXTS / (time.perf_counter() - started)
    await embedder.close()
    return {
        "threads": threads,
        "load_s": round(load_s, 3),
        "query_p50_ms": round(cuts[49], 2),
        "query_p95_ms": round(cuts[94], 2),
        "batch_sentences_per_s": round(throughput, 1),
    }


async def main() -> None:
    results = []
    for threads in (1, 2):
        figures = await measure(threads)
        results.append(figures)
        print(
            f"threads={threads}: load {figures['load_s']:.2f} s, "
            f"query p50 {figures['query_p50_ms']:.1f} ms p95 {figures['query_p95_ms']:.1f} ms, "
            f"batch {figures['batch_sentences_per_s']:.0f} sentences/s ({BATCH_TEXTS} texts)"
        )
    print(json.dumps({"model": MODEL, "results": results}))


if __name__ == "__main__":
    asyncio.run(main())
