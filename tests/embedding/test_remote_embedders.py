"""OpenAI and Gemini embedders against a local server that speaks their APIs: the real SDKs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import numpy as np
import pytest

from memory.embedding.base import Embedder
from memory.embedding.gemini_embedder import GeminiEmbedder
from memory.embedding.openai_embedder import OpenAIEmbedder
from memory.errors import ProviderError
from tests.fake_provider_server import (
    FakeProviderServer,
    Received,
    Reply,
    fake_vector,
    google_error,
    openai_embeddings,
    openai_error,
)

TEXTS = ["Alice lives in Paris", "Bob prefers tea", "The launch deadline is March 3"]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


@pytest.fixture
async def openai_embedder(server: FakeProviderServer) -> AsyncIterator[OpenAIEmbedder]:
    embedder = OpenAIEmbedder(
        api_key="sk-test-embed-0123456789", base_url=server.openai_base_url, timeout=10
    )
    yield embedder
    await embedder.close()


@pytest.fixture
async def gemini_embedder(server: FakeProviderServer) -> AsyncIterator[GeminiEmbedder]:
    embedder = GeminiEmbedder(
        api_key="AIzaSyTestEmbed0123456789abcdefghij",
        dimension=256,
        base_url=server.url,
        timeout=10,
    )
    yield embedder
    await embedder.close()


def assert_unit_rows_pointing_at(vectors: np.ndarray, texts: list[str]) -> None:
    """Each row is unit-norm and has the direction of the server's (non-normalised) vector."""
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for row, text in zip(vectors, texts, strict=True):
        expected = np.asarray(fake_vector(text, vectors.shape[1]), dtype=np.float32)
        assert float(row @ (expected / np.linalg.norm(expected))) == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------- OpenAI


async def test_openai_one_call_per_batch_with_normalised_vectors(
    server: FakeProviderServer, openai_embedder: OpenAIEmbedder
) -> None:
    batch = await openai_embedder.embed(TEXTS)

    assert (batch.model, batch.dimension) == ("text-embedding-3-small", 1536)
    assert batch.vectors.shape == (3, 1536)
    assert_unit_rows_pointing_at(batch.vectors, TEXTS)
    [sent] = server.requests
    assert sent.path == "/v1/embeddings"
    assert sent.body["model"] == "text-embedding-3-small"
    assert sent.body["input"] == TEXTS

    await openai_embedder.embed(["one more"])
    assert len(server.requests) == 2


async def test_openai_rows_follow_the_index_field_not_the_order_received(
    server: FakeProviderServer, openai_embedder: OpenAIEmbedder
) -> None:
    def shuffled(request: Received) -> Reply:
        reply = openai_embeddings(request)
        return Reply(body={**reply.body, "data": list(reversed(reply.body["data"]))})

    server.script(shuffled)
    batch = await openai_embedder.embed(TEXTS)

    assert_unit_rows_pointing_at(batch.vectors, TEXTS)


async def test_openai_no_texts_no_call(
    server: FakeProviderServer, openai_embedder: OpenAIEmbedder
) -> None:
    batch = await openai_embedder.embed([])

    assert batch.vectors.shape == (0, 1536)
    assert server.requests == []


async def test_an_unknown_model_learns_its_dimension_from_the_first_answer(
    server: FakeProviderServer,
) -> None:
    embedder = OpenAIEmbedder(
        api_key="k", model="nomic-embed-text", base_url=server.openai_base_url
    )
    try:
        assert embedder.dimension == 0
        batch = await embedder.embed(TEXTS[:1])
    finally:
        await embedder.close()
    assert batch.dimension == embedder.dimension == 1536
    assert server.requests[0].body["model"] == "nomic-embed-text"


@pytest.mark.parametrize(
    ("reply", "retryable", "retry_after"),
    [
        (openai_error(429, "Rate limit", {"Retry-After": "4"}), True, 4.0),
        (openai_error(500, "oops"), True, None),
        (openai_error(401, "Incorrect API key provided"), False, None),
        (openai_error(400, "input too long"), False, None),
    ],
)
async def test_openai_errors_are_mapped_and_sent_once(
    server: FakeProviderServer,
    openai_embedder: OpenAIEmbedder,
    reply: Reply,
    retryable: bool,
    retry_after: float | None,
) -> None:
    server.script(reply)

    with pytest.raises(ProviderError) as caught:
        await openai_embedder.embed(TEXTS)

    assert (caught.value.retryable, caught.value.status, caught.value.retry_after) == (
        retryable,
        reply.status,
        retry_after,
    )
    assert len(server.requests) == 1


async def test_openai_fewer_vectors_than_texts_is_an_error(
    server: FakeProviderServer, openai_embedder: OpenAIEmbedder
) -> None:
    def short(request: Received) -> Reply:
        reply = openai_embeddings(request)
        return Reply(body={**reply.body, "data": reply.body["data"][:1]})

    server.script(short)

    with pytest.raises(ProviderError, match="1 vectors"):
        await openai_embedder.embed(TEXTS)


# ---------------------------------------------------------------- Gemini


async def test_gemini_one_call_per_batch_with_the_configured_dimension(
    server: FakeProviderServer, gemini_embedder: GeminiEmbedder
) -> None:
    batch = await gemini_embedder.embed(TEXTS)

    assert (batch.model, batch.dimension) == ("gemini-embedding-001", 256)
    assert batch.vectors.shape == (3, 256)
    assert_unit_rows_pointing_at(batch.vectors, TEXTS)
    [sent] = server.requests
    assert sent.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert [item["content"]["parts"] for item in sent.body["requests"]] == [
        [{"text": text}] for text in TEXTS
    ]
    assert {item["outputDimensionality"] for item in sent.body["requests"]} == {256}
    assert {item["model"] for item in sent.body["requests"]} == {"models/gemini-embedding-001"}


async def test_gemini_splits_a_batch_of_more_than_100_texts_into_calls_of_at_most_100(
    server: FakeProviderServer, gemini_embedder: GeminiEmbedder
) -> None:
    """batchEmbedContents takes at most 100 requests; an import embeds up to 500 facts at once."""
    texts = [f"Alice owns bicycle number {i}" for i in range(250)]

    batch = await gemini_embedder.embed(texts)

    assert batch.vectors.shape == (250, 256)
    assert_unit_rows_pointing_at(batch.vectors, texts)
    sent = [
        [item["content"]["parts"][0]["text"] for item in r.body["requests"]]
        for r in server.requests
    ]
    assert [len(call) for call in sent] == [100, 100, 50]
    assert [text for call in sent for text in call] == texts


async def test_gemini_no_texts_no_call(
    server: FakeProviderServer, gemini_embedder: GeminiEmbedder
) -> None:
    assert (await gemini_embedder.embed([])).vectors.shape == (0, 256)
    assert server.requests == []


@pytest.mark.parametrize(
    ("reply", "retryable", "retry_after"),
    [
        (
            google_error(
                429,
                "Quota",
                details=[
                    {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "21s"}
                ],
            ),
            True,
            21.0,
        ),
        (google_error(503, "overloaded"), True, None),
        (google_error(400, "API key not valid"), False, None),
        (google_error(403, "permission denied"), False, None),
    ],
)
async def test_gemini_errors_are_mapped_and_sent_once(
    server: FakeProviderServer,
    gemini_embedder: GeminiEmbedder,
    reply: Reply,
    retryable: bool,
    retry_after: float | None,
) -> None:
    server.script(reply)

    with pytest.raises(ProviderError) as caught:
        await gemini_embedder.embed(TEXTS)

    assert (caught.value.retryable, caught.value.status, caught.value.retry_after) == (
        retryable,
        reply.status,
        retry_after,
    )
    assert len(server.requests) == 1


async def test_gemini_vectors_of_another_dimension_are_refused(
    server: FakeProviderServer, gemini_embedder: GeminiEmbedder
) -> None:
    server.script(Reply(body={"embeddings": [{"values": fake_vector(t, 768)} for t in TEXTS]}))

    with pytest.raises(ProviderError, match="dimension 256"):
        await gemini_embedder.embed(TEXTS)


@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_a_slow_server_is_a_retryable_timeout(server: FakeProviderServer, kind: str) -> None:
    server.script(Reply(body={}, delay=30))
    embedder: Embedder = (
        OpenAIEmbedder(api_key="k", base_url=server.openai_base_url, timeout=0.3)
        if kind == "openai"
        else GeminiEmbedder(api_key="k", base_url=server.url, timeout=0.3)
    )
    try:
        with pytest.raises(ProviderError) as caught:
            await embedder.embed(TEXTS)
    finally:
        await embedder.close()

    assert caught.value.retryable and "timed out" in str(caught.value)
    assert len(server.wait_for_requests(1)) == 1
