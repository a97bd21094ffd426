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
from memory.pipeline.commit import _recheck
from memory.pipeline.facts import dedup_gate
from memory.pipeline.types import CandidatesResult, Window
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
