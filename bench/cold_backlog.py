"""How a backlog of cold sessions drains: N idle sessions, then the cold-sessions schedule is
triggered until none is left. One dev server (file database), SQLite store, fake providers (the
offline heuristic LLM, optionally slowed down by --llm-delay seconds per call, and word-hash
embeddings), so the figures measure the job's orchestration and the store, not a model.

Prints one line per scheduled execution and per run (continue-as-new), then one JSON line:
{"sessions", "firings", "runs", "pages", "run_seconds_mean", "run_seconds_max", "sessions_per_s", ...}

    .venv/bin/python bench/cold_backlog.py [--sessions 500] [--page-size 100] [--concurrency 4]
        [--llm-delay 0]

A run continues as new after 10 pages (workflows.cold_sessions.PAGES_PER_RUN), so one scheduled
execution drains any backlog; "firings" counts executions that found work, "runs" their runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import BaseModel  # noqa: E402
from temporalio.client import Client, WorkflowHandle  # noqa: E402

from bench.common import dev_server  # noqa: E402
from client.memory_client import MemoryClient  # noqa: E402
from memory.deps import Deps  # noqa: E402
from memory.llm.base import LLMProvider, LLMRequest, LLMResult  # noqa: E402
from memory.llm.heuristic import HeuristicProvider  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from memory.models import AgentConfig, MessageIn  # noqa: E402
from memory.settings import SessionSettings, Settings, StoreSettings, TemporalSettings  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402
from runtime.schedule import ensure_schedule, schedule_id, trigger_schedule  # noqa: E402
from tests.fakes import WordHashEmbedder  # noqa: E402
from worker import build_worker  # noqa: E402
from workflows.cold_sessions import ColdSessionsResult  # noqa: E402

SAMPLE = json.loads((ROOT / "samples" / "conversation.json").read_text())


class SlowLLM(LLMProvider):
    """The heuristic provider behind a fixed latency, to see how concurrency pays off."""

    name = "heuristic"

    def __init__(self, delay: float) -> None:
        self.inner, self.delay = HeuristicProvider(), delay

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        await asyncio.sleep(self.delay)
        return await self.inner.generate_structured(request, schema)


def session_messages(i: int, last: datetime) -> list[MessageIn]:
    """The sample conversation, made unique to session ``i`` and ending at ``last``."""
    raw = SAMPLE["messages"]
    end = datetime.fromisoformat(raw[-1]["created_at"])
    return [
        MessageIn.model_validate(
            {
                **m,
                "message_id": f"{m['message_id']}-{i}",
                "created_at": last - (end - datetime.fromisoformat(m["created_at"])),
            }
        )
        for m in raw
    ]


async def run_times(client: Client, workflow_id: str) -> list[float]:
    """Seconds from start to close of each run of one scheduled execution, oldest first."""
    seconds = []
    async for wf in client.list_workflows(f'WorkflowId = "{workflow_id}"'):
        if wf.close_time is not None:
            seconds.append((wf.close_time - wf.start_time).total_seconds())
    return seconds[::-1]


async def formed_sessions(store: SQLiteStore, agent_id: str, n: int) -> int:
    states = [await store.get_session_agent_state(f"cold-{i}", agent_id) for i in range(n)]
    return sum(1 for s in states if s is not None and s.formations > 0)


async def until_formed(store: SQLiteStore, agent_id: str, n: int, started: int) -> None:
    """The job starts formations and returns: wait until those it started have committed."""
    # Polling the store is the measurement: the formations run in their own workflows.
    while await formed_sessions(store, agent_id, n) < min(n, started):  # noqa: ASYNC110
        await asyncio.sleep(0.2)


async def drain(
    client: Client, tmp: Path, args: argparse.Namespace
) -> tuple[list[ColdSessionsResult], list[list[float]], float, int]:
    settings = Settings(
        store=StoreSettings(sqlite_path=tmp / "mnemos.db"),
        temporal=TemporalSettings(
            task_queue=f"bench-{uuid.uuid4().hex[:6]}", search_attributes=False
        ),
        sessions=SessionSettings(cold_page_size=args.page_size, cold_concurrency=args.concurrency),
    )
    store = SQLiteStore(settings.store.sqlite_path)
    await store.setup()
    llm: LLMProvider = SlowLLM(args.llm_delay) if args.llm_delay else HeuristicProvider()
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    memory = MemoryClient(client, store, settings, embedder=deps.embedder)
    agent = AgentConfig.model_validate(SAMPLE["agent"])
    await memory.register_agent(agent)
    last = datetime.now(UTC) - timedelta(hours=1)
    for i in range(args.sessions):  # oldest first, one second apart
        await memory.record_messages(
            agent.agent_id, f"cold-{i}", session_messages(i, last + timedelta(seconds=i))
        )
    await ensure_schedule(client, settings)
    results: list[ColdSessionsResult] = []
    runs: list[list[float]] = []
    t0 = time.perf_counter()
    async with build_worker(client, deps, settings):
        while len(results) < args.max_firings:
            run: WorkflowHandle[Any, ColdSessionsResult] = await trigger_schedule(client, settings)
            result = await run.result()
            results.append(result)
            runs.append(await run_times(client, run.id))
            print(f"firing {len(results)}: {result.summary()}", flush=True)
            for n, seconds in enumerate(runs[-1], 1):
                print(f"  run {n}: {seconds:.2f} s", flush=True)
            if result.sessions == 0:
                break
            started = sum(r.started for r in results)
            await until_formed(store, agent.agent_id, args.sessions, started)
    wall = time.perf_counter() - t0
    formed = await formed_sessions(store, agent.agent_id, args.sessions)
    await client.get_schedule_handle(schedule_id(settings)).delete()
    await store.close()
    return results, runs, wall, formed


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env:
            results, runs, wall, formed = await drain(env.client, Path(tmp), args)
    working = [r for r in results if r.sessions]  # the last firing only confirms the end
    all_runs = [s for firing in runs[: len(working)] for s in firing]
    return {
        "sessions": args.sessions,
        "page_size": args.page_size,
        "concurrency": args.concurrency,
        "llm_delay_s": args.llm_delay,
        "firings": len(working),
        "runs": len(all_runs),
        "pages": sum(r.pages for r in working),
        "formed": formed,
        "failed": sum(r.failed for r in results),
        "run_seconds_mean": round(statistics.mean(all_runs), 2) if all_runs else 0,
        "run_seconds_max": round(max(all_runs), 2) if all_runs else 0,
        "total_seconds": round(wall, 2),
        "sessions_per_s": round(formed / wall, 2),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=500)
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--llm-delay", type=float, default=0.0)
    parser.add_argument("--max-firings", type=int, default=5)
    configure_logging("warning")  # one line per activity would drown the figures
    result = asyncio.run(main(parser.parse_args()))
    print(json.dumps(result))
