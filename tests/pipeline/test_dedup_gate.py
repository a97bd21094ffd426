"""The dedup candidate gate belongs to the embedder: MiniLM's measured one lets the dedup LLM see
an update that 002's 0.7 (set on OpenAI's scale) hid; an explicit threshold still wins."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast

import numpy as np
import pytest

from memory.deps import Deps
from memory.embedding.base import Embedder, EmbeddingBatch
from memory.embedding.local import LocalMiniLMEmbedder
from memory.embedding.openai_embedder import OpenAIEmbedder
from memory.llm.heuristic import HeuristicProvider
from memory.pipeline.candidates import CANDIDATE_BYTES, dedup_gate, fewest_fitting
from memory.pipeline.commit import _recheck
from memory.pipeline.types import CandidatesResult, SimilarFact, Window
from memory.settings import FactSettings, Settings
from memory.store.base import MemoryStore


class _Uncalibrated(Embedder):
    model = "plain"
    dimension = 2

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        vectors = np.ones((len(texts), 2), dtype=np.float32)
        return EmbeddingBatch(vectors=vectors, model=self.model, dimension=self.dimension)


class _OpenAIScale(_Uncalibrated):
    calibration = OpenAIEmbedder.calibration


class _Local(_Uncalibrated):
    calibration = LocalMiniLMEmbedder.calibration


async def test_minilm_gate_shows_the_llm_an_update_that_0_7_hid() -> None:
    embedder = LocalMiniLMEmbedder()
    stored, update, unrelated = (
        "User works as a nurse.",
        "User now works as a software developer.",
        "User's favourite colour is blue.",
    )
    vectors = (await embedder.embed([stored, update, unrelated])).vectors
    gate = dedup_gate(Settings().facts, embedder)
    assert gate == pytest.approx(0.45)
    update_cosine = float(vectors[0] @ vectors[1])
    assert gate <= update_cosine < 0.7
    assert float(vectors[0] @ vectors[2]) < gate
    await embedder.close()


def test_openai_keeps_002s_gate_and_an_uncalibrated_model_the_setting() -> None:
    assert dedup_gate(FactSettings(), _OpenAIScale()) == 0.7
    assert dedup_gate(FactSettings(), _Uncalibrated()) == 0.7


def test_an_explicit_threshold_overrides_the_embedders_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    minilm = LocalMiniLMEmbedder.calibration
    assert minilm is not None and minilm.dedup_gate == 0.45
    assert dedup_gate(FactSettings(dedup_similarity_threshold=0.6), _OpenAIScale()) == 0.6
    monkeypatch.setenv("MNEMOS_FACTS__DEDUP_SIMILARITY_THRESHOLD", "0.7")
    assert dedup_gate(Settings().facts, _Local()) == 0.7


def test_the_commit_rechecks_adds_at_the_gate_their_candidates_were_read_at() -> None:
    """A fact committed meanwhile at cosine 0.45–0.7 would have been a MiniLM candidate: the
    re-check at 0.7 let the concurrent ADD through beside it."""
    deps = Deps(
        settings=Settings(),
        store=cast(MemoryStore, None),  # not read
        llm=HeuristicProvider(),
        embedder=_Local(),
    )
    read = CandidatesResult(by_new_index={}, read_at=datetime(2026, 1, 1, tzinfo=UTC))
    recheck = _recheck(deps, cast(Window, None), read)  # no candidates: the window is not read
    assert recheck is not None and recheck.similarity == pytest.approx(0.45)


def test_a_windows_candidates_are_cut_to_the_most_similar_when_their_texts_grow_too_large() -> None:
    """Their texts travel in the decision's step payloads, which Temporal refuses over 2 MB: a
    window of many long facts keeps fewer candidates a fact, the most similar, never none."""

    def found(i: int, n: int) -> list[SimilarFact]:
        return [
            SimilarFact(fact_id=f"f{i}-{k}", content="x" * 400, version=1, similarity=1 - k / 100)
            for k in range(n)
        ]

    small = {0: found(0, 20), 1: found(1, 3)}
    assert fewest_fitting(small) == small  # within the budget: unchanged
    many = {i: found(i, 20) for i in range(320)}  # 2.56 MB of texts
    cut = fewest_fitting(many)
    assert sum(len(s.content) for c in cut.values() for s in c) <= CANDIDATE_BYTES
    assert all(c == many[i][: len(c)] and len(c) >= 1 for i, c in cut.items())
    assert fewest_fitting({0: found(0, 2)}, budget=10) == {0: found(0, 1)}
