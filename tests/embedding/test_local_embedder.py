"""The offline MiniLM embedder: shape, order, similarity, the token limit, file integrity."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from memory.embedding import local
from memory.embedding.local import DIMENSION, LocalMiniLMEmbedder, default_files
from memory.errors import ProviderError

MIXED = [
    "ok",
    "Alice's email is alice@example.com",
    "The quarterly planning meeting moved to Thursday afternoon because half the team is travel"
    "ling on Tuesday and the venue was double-booked.",
    "Bob prefers tea.",
    "",
    "Remember that the staging database is wiped every Sunday night at midnight UTC, so never keep "
    "test fixtures there longer than a week, and tell the new interns about it on their first day.",
    "Mars festival",
    "User likes hiking in the Alps every summer with their two dogs.",
    "What time is it?",
    "The deployment failed because the container image tag was missing.",
    "🙂 emoji and ünïcödé",
]


@pytest.fixture(scope="module")
def embedder() -> LocalMiniLMEmbedder:
    # A small batch size so that MIXED spans several length-sorted batches.
    return LocalMiniLMEmbedder(threads=2, batch_size=4)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b))


async def test_vectors_are_unit_norm_float32_rows(embedder: LocalMiniLMEmbedder) -> None:
    batch = await embedder.embed(["hello world", "another sentence"])
    assert batch.vectors.shape == (2, DIMENSION)
    assert batch.vectors.dtype == np.float32
    assert batch.model == "all-MiniLM-L6-v2-int8"
    assert batch.dimension == DIMENSION == 384
    np.testing.assert_allclose(np.linalg.norm(batch.vectors, axis=1), 1.0, atol=1e-5)


async def test_empty_input_gives_zero_rows(embedder: LocalMiniLMEmbedder) -> None:
    batch = await embedder.embed([])
    assert batch.vectors.shape == (0, DIMENSION)
    assert batch.vectors.dtype == np.float32


async def test_same_input_same_vectors(embedder: LocalMiniLMEmbedder) -> None:
    first = await embedder.embed(MIXED)
    second = await embedder.embed(MIXED)
    np.testing.assert_array_equal(first.vectors, second.vectors)


async def test_batch_keeps_input_order_and_matches_single_embeddings(
    embedder: LocalMiniLMEmbedder,
) -> None:
    batch = await embedder.embed(MIXED)
    alone = np.vstack([(await embedder.embed([text])).vectors for text in MIXED])
    np.testing.assert_allclose(batch.vectors, alone, atol=1e-5)
    # Distinct texts give distinct vectors, so a row swap could not pass the check above.
    assert not np.allclose(alone[1], alone[2], atol=1e-3)


async def test_paraphrases_score_higher_than_unrelated_texts(
    embedder: LocalMiniLMEmbedder,
) -> None:
    pairs = [
        (
            "Alice's email is alice@example.com",
            "What is Alice's email address?",
            "The Mars festival budget is $50,000",
        ),
        (
            "The user is allergic to peanuts",
            "Does the user have a nut allergy?",
            "Deploy on Fridays",
        ),
        ("Bob moved to Berlin last year", "Where does Bob live now?", "The cat sleeps on the sofa"),
    ]
    for anchor, paraphrase, unrelated in pairs:
        vectors = (await embedder.embed([anchor, paraphrase, unrelated])).vectors
        related = cosine(vectors[0], vectors[1])
        assert related > cosine(vectors[0], vectors[2]) + 0.2, (anchor, related)


async def test_text_longer_than_256_tokens_is_truncated(embedder: LocalMiniLMEmbedder) -> None:
    prefix = "memory " * 300  # one token per word
    texts = [prefix + "about cooking pasta", prefix + "about quantum physics", "memory " * 5000]
    vectors = (await embedder.embed(texts)).vectors
    assert vectors.shape == (3, DIMENSION)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Past the 256-token window the model sees nothing, so the three texts look the same to it.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)


async def test_concurrent_calls_on_a_fresh_embedder_agree_with_sequential_ones(
    embedder: LocalMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = (await embedder.embed(MIXED)).vectors
    # A process that has loaded no model yet: the six calls race to load it.
    monkeypatch.setattr(local, "_RUNTIMES", {})
    fresh = LocalMiniLMEmbedder(threads=1, batch_size=4)
    results = await asyncio.gather(*(fresh.embed(MIXED[i:] + MIXED[:i]) for i in range(6)))
    for shift, batch in enumerate(results):
        np.testing.assert_allclose(batch.vectors, np.roll(expected, -shift, axis=0), atol=1e-5)
    await fresh.close()


async def test_tampered_tokenizer_is_refused_naming_the_file(tmp_path: Path) -> None:
    files = default_files()
    tampered = tmp_path / "tokenizer.json"
    tampered.write_bytes(files.tokenizer.read_bytes().replace(b'"[UNK]"', b'"[UNX]"', 1))
    embedder = LocalMiniLMEmbedder(files=dataclasses.replace(files, tokenizer=tampered))
    with pytest.raises(ProviderError, match=r"checksum mismatch for .*tokenizer\.json") as info:
        await embedder.embed(["hello"])
    assert str(tampered) in str(info.value)
    assert info.value.retryable is False


async def test_missing_model_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "model.onnx"
    embedder = LocalMiniLMEmbedder(files=dataclasses.replace(default_files(), model=missing))
    with pytest.raises(ProviderError, match="cannot read embedding file") as info:
        await embedder.load()
    assert str(missing) in str(info.value)
    assert info.value.retryable is False
