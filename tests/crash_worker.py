"""A real worker process for the crash test: heuristic LLM, word-hash embeddings, SQLite file store.

The LLM is gated: when it reaches the task named by CRASH_GATE_TASK it writes ``reached`` in
CRASH_GATE_DIR and holds the call until a ``release`` file exists there — a slow model call during
which the test kills this process. A CRASH_GATE_TASK naming a store method (``commit_formation``)
gates that store call the same way: a store step killed midway.

The tests set MNEMOS_TEMPORAL__STICKY_QUEUE_SECONDS=1 (bench/session_end_kills.py does not): after
a kill, the run's next workflow task goes to the dead worker's own (sticky) queue and waits that
long before the survivor takes it (10 s by default): the same recovery, sooner.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from memory.deps import Deps
from memory.llm.base import LLMProvider, LLMRequest, LLMResult
from memory.llm.heuristic import HeuristicProvider
from memory.settings import Settings
from memory.store import MemoryStore, open_store
from runtime.connection import connect
from tests.fakes import WordHashEmbedder
from worker import build_worker


async def _hold(gate_dir: Path) -> None:
    (gate_dir / "reached").touch()
    # A slow call, as seen from Temporal; the test (another process) releases it.
    while not (gate_dir / "release").exists():  # noqa: ASYNC110
        await asyncio.sleep(0.05)


class GatedStore:
    """The store, holding calls of one method at the gate."""

    def __init__(self, inner: MemoryStore, gate_dir: Path, method: str) -> None:
        self._inner, self._gate_dir, self._method = inner, gate_dir, method

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name != self._method:
            return attr

        async def gated(*args: Any, **kwargs: Any) -> Any:
            await _hold(self._gate_dir)
            return await attr(*args, **kwargs)

        return gated


class GatedLLM(LLMProvider):
    name = "heuristic"

    def __init__(self, inner: LLMProvider, gate_dir: Path, task: str) -> None:
        self.inner, self.gate_dir, self.task = inner, gate_dir, task

    async def _gate(self, request: LLMRequest) -> None:
        if request.task == self.task:
            await _hold(self.gate_dir)

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        await self._gate(request)
        return await self.inner.generate_structured(request, schema)


async def main() -> None:
    settings = Settings()
    client = await connect(settings.temporal, codec=settings.codec)  # MNEMOS_CODEC__KEY
    gate_dir, task = Path(os.environ["CRASH_GATE_DIR"]), os.environ["CRASH_GATE_TASK"]
    store = await open_store(settings)
    if hasattr(store, task):
        store = cast(MemoryStore, GatedStore(store, gate_dir, task))
    llm = GatedLLM(HeuristicProvider(), gate_dir, task)
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    async with build_worker(client, deps, settings):
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main())
