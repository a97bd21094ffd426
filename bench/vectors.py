"""Synthetic 384-d fact and query vectors for the search bench: clustered like sentence
embeddings, or uniform on the sphere (the old worst case, kept for comparison).

Why clustered: uniform random unit vectors have no neighbourhoods (every cosine sits within
±0.2 of 0, the nearest neighbour barely nearer than any other point), the worst case for any
approximate index; an HNSW graph's recall on them says little about recall on text. Sentence
embeddings are anisotropic (a common mean direction), concentrated in a few dozen directions,
and grouped by topic.

The clustered model: ``v = normalize(a·m + c_t + s·e·n)`` with ``m`` a shared mean direction,
``c_t`` the centre of a topic ``t`` (one topic per ~15 facts, topics drawn with Zipf-like
popularity), ``n`` Gaussian noise and ``c_t`` both drawn with a decaying spectrum (variance of
the i-th direction ∝ i^-0.85, in a random rotation), and ``e`` a per-vector log-normal spread
(some facts are generic, some specific). Queries come from the same topics with 12% more noise
(questions are vaguer than facts). The parameters were fitted (``--calibrate``) to
all-MiniLM-L6-v2 on LoCoMo's 3,970 observations and turns (facts) and its 999 questions
(queries); at the same size:

| statistic | MiniLM on LoCoMo | clustered | uniform |
| --- | --- | --- | --- |
| cosine of random fact pairs, mean / std | 0.168 / 0.126 | 0.168 / 0.120 | 0.000 / 0.051 |
| nearest-neighbour cosine p10 / p50 / p90 | 0.59 / 0.71 / 0.83 | 0.59 / 0.74 / 0.84 | 0.17 / 0.18 / 0.21 |
| query's best / 10th best cosine (median) | 0.72 / 0.57 | 0.71 / 0.56 | 0.18 / 0.14 |
| variance in the top 10 / 50 principal axes | 0.32 / 0.67 | 0.33 / 0.64 | 0.04 / 0.20 |
| effective dimension (participation ratio) | 60 | 55 | 350 |

What it cannot show: real text has near-duplicates and long-range semantic structure that a
Gaussian mixture lacks, so the recall measured on it is an estimate, not MiniLM's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import numpy.typing as npt

DIMENSION = 384
Vectors = npt.NDArray[np.float32]

MEAN_WEIGHT = 0.62  # a: the shared direction (sentence embeddings' anisotropy)
NOISE = 0.95  # s: a fact's distance from its topic's centre
QUERY_NOISE = 1.12  # queries' noise, relative to facts'
SPREAD = 0.35  # sigma of the per-vector log-normal noise factor
SPECTRUM = 0.85  # variance of the i-th direction ∝ i^-SPECTRUM
FACTS_PER_TOPIC = 15


def normalized(vectors: npt.NDArray[np.float64]) -> Vectors:
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


class UniformVectors:
    """Uniform random unit vectors: no structure, the worst case for an ANN index."""

    def __init__(self, facts: int, rng: np.random.Generator) -> None:
        self.rng = rng

    def facts(self, count: int) -> Vectors:
        return normalized(self.rng.standard_normal((count, DIMENSION)))

    def queries(self, count: int) -> Vectors:
        return self.facts(count)


class ClusteredVectors:
    """Topic clusters with an embedding-like spectrum (the module docstring); ``facts`` sets the
    number of topics, so that a topic holds ~FACTS_PER_TOPIC facts at any size."""

    def __init__(self, facts: int, rng: np.random.Generator) -> None:
        self.rng = rng
        rotation, _ = np.linalg.qr(rng.standard_normal((DIMENSION, DIMENSION)))
        variances = (np.arange(DIMENSION) + 1.0) ** -SPECTRUM
        self.shape = rotation * np.sqrt(variances / variances.sum())
        mean = rng.standard_normal(DIMENSION)
        self.mean = MEAN_WEIGHT * mean / np.linalg.norm(mean)
        topics = max(1, facts // FACTS_PER_TOPIC)
        self.centres = self._shaped(topics)
        popularity = 1.0 / (np.arange(topics) + 10.0)
        self.popularity = popularity / popularity.sum()

    def _shaped(self, count: int) -> npt.NDArray[np.float64]:
        return np.asarray(self.rng.standard_normal((count, DIMENSION)) @ self.shape.T)

    def _draw(self, count: int, noise: float) -> Vectors:
        out = np.empty((count, DIMENSION), dtype=np.float32)
        for start in range(0, count, 10_000):  # bounded memory at any size
            n = min(10_000, count - start)
            topic = self.rng.choice(len(self.centres), n, p=self.popularity)
            scale = noise * np.exp(SPREAD * self.rng.standard_normal((n, 1)))
            out[start : start + n] = normalized(
                self.mean + self.centres[topic] + scale * self._shaped(n)
            )
        return out

    def facts(self, count: int) -> Vectors:
        return self._draw(count, NOISE)

    def queries(self, count: int) -> Vectors:
        return self._draw(count, NOISE * QUERY_NOISE)


VectorModel = ClusteredVectors | UniformVectors
MODES: dict[str, type[VectorModel]] = {"clustered": ClusteredVectors, "uniform": UniformVectors}


def statistics(facts: Vectors, queries: Vectors, seed: int = 0) -> dict[str, float]:
    """The figures of the docstring's table, for a set of fact and query vectors."""
    rng = np.random.default_rng(seed)
    i, j = rng.integers(0, len(facts), 20_000), rng.integers(0, len(facts), 20_000)
    pairs = np.sum(facts[i[i != j]] * facts[j[i != j]], axis=1)
    similar = facts @ facts.T
    np.fill_diagonal(similar, -2.0)
    nearest = similar.max(axis=1)
    best = -np.sort(-(queries @ facts.T), axis=1)
    variance = np.linalg.svd(facts - facts.mean(0), compute_uv=False) ** 2
    variance /= variance.sum()
    figures = {
        "pair_mean": pairs.mean(), "pair_std": pairs.std(),
        "nn_p10": np.percentile(nearest, 10), "nn_p50": np.median(nearest),
        "nn_p90": np.percentile(nearest, 90),
        "query_best": np.median(best[:, 0]), "query_10th": np.median(best[:, 9]),
        "var_top10": variance[:10].sum(), "var_top50": variance[:50].sum(),
        "effective_dim": 1.0 / np.sum(variance**2),
    }  # fmt: skip
    return {k: round(float(v), 3) for k, v in figures.items()}


def locomo_sentences(path: Path) -> tuple[list[str], list[str]]:
    """LoCoMo's observations and turns (the facts) and its questions (the queries)."""
    facts: list[str] = []
    questions: list[str] = []
    for sample in json.loads(path.read_text()):
        for per_speaker in sample["observation"].values():
            for observations in per_speaker.values():
                facts += [text for text, _ in observations]
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and not key.endswith("date_time"):
                facts += [turn["text"] for turn in turns]
        questions += [qa["question"] for qa in sample["qa"]]
    return facts, questions


async def calibrate(path: Path) -> dict[str, dict[str, float]]:
    """The statistics of MiniLM on LoCoMo (``path``: locomo-dev.json) beside both synthetic modes
    at the same size."""
    from memory.embedding.local import LocalMiniLMEmbedder

    facts, questions = locomo_sentences(path)
    embedder = LocalMiniLMEmbedder()
    real = statistics(
        (await embedder.embed(facts)).vectors, (await embedder.embed(questions)).vectors
    )
    figures = {"minilm_locomo": real}
    for name, mode in MODES.items():
        model = mode(len(facts), np.random.default_rng(0))
        figures[name] = statistics(model.facts(len(facts)), model.queries(len(questions)))
    return figures
