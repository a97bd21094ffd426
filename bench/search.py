"""Latency of search_facts on SQLite (or PostgreSQL, MongoDB: --backend) at 10k and 100k facts of one agent; recall of its vector stage.

Facts are synthetic sentences (Zipf-distributed pseudo-words plus English function words, so the
text index has realistic posting lists). Their 384-d vectors are, by default, clustered like
sentence embeddings (bench/vectors.py: topics with an embedding-like spectrum, fitted to MiniLM on
LoCoMo, which ``--calibrate PATH`` measures again); ``--vectors uniform`` gives the old uniform
random unit vectors, the worst case for an approximate index (no neighbourhoods), for comparison.
Queries are question-like word lists with query vectors from the same model; they are
precomputed (``PrecomputedEmbedder``), so the figures are the store and fusion alone; one MiniLM
query embedding adds ~5–6 ms on top (bench/embedding.py). The gates are off so that every stage
handles full candidate lists, whatever the vectors' cosines.

Recall@10 compares the store's vector stage with exact search in numpy. SQLite searches exactly
(recall 1.0 in either mode, a check of the bench itself); PostgreSQL's HNSW graph is approximate;
MongoDB without Atlas Search indexes (a plain server, and mongoeco here) searches exactly in numpy.

``--backend mongo`` without MONGODB_URI runs on mongoeco, an in-memory Python emulation of the
wire protocol in this process (tests/mongo_server.py): its latencies are the emulation's, not a
MongoDB server's, and it is slow; use small sizes (``--sizes 1000 --queries 100``).

Run: ``.venv/bin/python -m bench.search [--sizes 10000 100000] [--queries 300]
[--backend sqlite|postgres|mongo] [--vectors clustered|uniform] [--ef-search 100]``
(postgres: POSTGRES_DSN, else a throwaway embedded server; mongo: MONGODB_URI, else mongoeco).
The last line is one JSON object with every figure.
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
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

# Run as a script (``python bench/x.py``): the repository root goes on the path for ``bench``.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import BACKEND_HELP, BACKENDS, BulkLoad, bench_store  # noqa: E402
from bench.vectors import DIMENSION, MODES, VectorModel, calibrate  # noqa: E402
from memory.embedding.base import Embedder, EmbeddingBatch  # noqa: E402
from memory.formation_commit import FactAdd, FormationCommit  # noqa: E402
from memory.models import AgentConfig, FactFilter, MessageIn  # noqa: E402
from memory.query_words import content_words  # noqa: E402
from memory.rag import search_facts  # noqa: E402
from memory.search_results import SearchResult  # noqa: E402
from memory.settings import RagSettings, Settings  # noqa: E402
from memory.store.base import MemoryStore  # noqa: E402

MODEL = "bench-random-384"
NOW = datetime(2025, 6, 1, tzinfo=UTC)
BATCH = 2000
AGENT = AgentConfig(agent_id="bench-agent", name="Bench")
FUNCTION_WORDS = ("the", "a", "of", "to", "and", "in", "is", "was", "for", "on", "with", "at", "by")
QUESTION_WORDS = ("what", "when", "where", "who", "which", "how", "did", "does", "is", "the")


def vocabulary(size: int, rng: random.Random) -> list[str]:
    syllables = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices(syllables, k=rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    """Sentences of 8–20 words, a third of them function words. Content words follow Zipf's law
    from rank 100 on, as English content words do (the top 100 ranks are function words)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = vocabulary(20_000, self.rng)
        self.weights = [1.0 / (rank + 100) for rank in range(len(self.words))]

    def content(self, count: int) -> list[str]:
        return self.rng.choices(self.words, weights=self.weights, k=count)

    def sentence(self) -> str:
        length = self.rng.randint(8, 20)
        words = self.content(length)
        for i in range(0, length, 3):
            words[i] = self.rng.choice(FUNCTION_WORDS)
        return " ".join(words).capitalize() + "."

    def question(self) -> str:
        return " ".join(self.rng.sample(QUESTION_WORDS, 3) + self.content(3)) + "?"


class PrecomputedEmbedder(Embedder):
    """Hands out prepared query vectors by text: search latency without the model."""

    model = MODEL
    dimension = DIMENSION

    def __init__(self, vectors: dict[str, npt.NDArray[np.float32]]) -> None:
        self.vectors = vectors

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        rows = np.stack([self.vectors[t] for t in texts])
        return EmbeddingBatch(vectors=rows, model=self.model, dimension=self.dimension)


async def fill(
    store: MemoryStore,
    size: int,
    corpus: Corpus,
    vectors: VectorModel,
    bulk: BulkLoad | None = None,
) -> npt.NDArray[np.float32]:
    """Store ``size`` agent-scoped facts; returns their vectors in insertion order."""
    await store.upsert_agent(AGENT)
    session = "bench-load"
    message = MessageIn(message_id="m1", role="other", content="load", created_at=NOW)
    await store.record_messages(
        session, AGENT.agent_id, [message], weights={}, chars_per_token=4.0, now=NOW
    )
    all_vectors = vectors.facts(size)
    for start in range(0, size, BATCH):
        batch = all_vectors[start : start + BATCH]
        ops = [
            FactAdd(
                fact_id=f"f{start + i}", scope="agent", content=corpus.sentence(),
                embedding=batch[i].tolist(),
            )
            for i in range(len(batch))
        ]  # fmt: skip
        await store.commit_formation(
            FormationCommit(
                formation_id=f"bench-{start}", session_id=session, agent_id=AGENT.agent_id,
                expected_cursor=0, new_cursor=0, embedding_model=MODEL, fact_ops=ops,
                committed_at=NOW,
            )
        )  # fmt: skip
        if start == 0 and bulk is not None:
            await bulk.drop_index(DIMENSION)  # the first commit made it
    return all_vectors


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples_ms, n=100)
    return {"p50_ms": round(cuts[49], 2), "p99_ms": round(cuts[98], 2)}


async def timed(calls: Sequence[Callable[[], Awaitable[object]]]) -> dict[str, float]:
    for call in calls[:10]:  # warm-up: the vector cache loads on the first search
        await call()
    samples = []
    for call in calls:
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


async def stages(searches: Sequence[Awaitable[SearchResult]]) -> dict[str, float]:
    """Where a search's time goes: the median of each stage its debug output times."""
    by_stage: dict[str, list[float]] = {}
    for search in searches:
        result = await search
        assert result.debug is not None
        for stage, ms in result.debug.timings_ms.items():
            by_stage.setdefault(stage, []).append(ms)
    return {stage: round(statistics.median(ms), 2) for stage, ms in by_stage.items()}


async def measure(
    size: int, queries: int, tmp: Path, backend: str, ef_search: int = 100,
    vectors: str = "clustered",
) -> dict[str, object]:  # fmt: skip
    async with bench_store(backend, tmp, f"search-{size}", ef_search=ef_search) as store:
        return await measure_on(store, size, queries, vectors)


async def measure_on(
    store: MemoryStore, size: int, queries: int, vectors: str = "clustered"
) -> dict[str, object]:
    corpus = Corpus(seed=size)
    model = MODES[vectors](size, np.random.default_rng(size))
    started = time.perf_counter()
    bulk = BulkLoad(store)
    fact_vectors = await fill(store, size, corpus, model, bulk)
    await bulk.build_index(DIMENSION)
    load_s = time.perf_counter() - started

    texts = [corpus.question() for _ in range(queries)]
    query_vectors = model.queries(queries)
    embedder = PrecomputedEmbedder(dict(zip(texts, query_vectors, strict=True)))
    loose = Settings(
        rag=RagSettings(semantic_score_threshold=0, text_score_threshold=0, rrf_score_threshold=0)
    )
    flt = FactFilter(agent_id=AGENT.agent_id)

    def search(text: str) -> Callable[[], Awaitable[object]]:
        return lambda: search_facts(
            store, embedder, loose, agent=AGENT, session=None, user_id=None, queries=[text],
            now=NOW,
        )  # fmt: skip

    def vector(q: npt.NDArray[np.float32]) -> Callable[[], Awaitable[object]]:
        return lambda: store.vector_search(q, flt, limit=20)

    def text(words: str) -> Callable[[], Awaitable[object]]:
        return lambda: store.text_search(words, flt, limit=20)

    figures: dict[str, object] = {"facts": size, "load_s": round(load_s, 1)}
    figures["search_facts"] = await timed([search(t) for t in texts])
    figures["search_facts_stages_p50_ms"] = await stages(
        [
            search_facts(
                store, embedder, loose, agent=AGENT, session=None, user_id=None, queries=[t],
                now=NOW, debug=True,
            )
            for t in texts[:100]
        ]
    )  # fmt: skip
    figures["vector_search"] = await timed([vector(q) for q in query_vectors])
    figures["text_search"] = await timed([text(content_words(t)) for t in texts])
    figures["text_search_raw_query"] = await timed([text(t) for t in texts])

    # Recall@10 of the store's vector stage against exact search in numpy.
    found = 0
    for q in query_vectors:
        exact = {f"f{i}" for i in np.argsort(-(fact_vectors @ q))[:10]}
        hits = await store.vector_search(q, flt, limit=10)
        found += len(exact & {h.fact.fact_id for h in hits})
    figures["vector_recall_at_10"] = round(found / (10 * queries), 4)
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite", help=BACKEND_HELP)
    parser.add_argument("--ef-search", type=int, default=100, help="postgres: hnsw.ef_search")
    parser.add_argument("--vectors", choices=sorted(MODES), default="clustered")
    parser.add_argument(
        "--calibrate", type=Path, metavar="LOCOMO_JSON",
        help="only print the vector statistics of MiniLM on this LoCoMo file beside both modes",
    )  # fmt: skip
    args = parser.parse_args()
    if args.calibrate is not None:
        print(json.dumps(await calibrate(args.calibrate)))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            figures = await measure(
                size, args.queries, Path(tmp), args.backend, args.ef_search, args.vectors
            )
            figures |= {
                "backend": args.backend, "ef_search": args.ef_search, "vectors": args.vectors,
            }  # fmt: skip
            results.append(figures)
            print(json.dumps(figures))
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    asyncio.run(main())
