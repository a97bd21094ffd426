"""Formation throughput and latency against a no-op chain of as many activities, on one dev server.

Providers are zero-latency (the offline heuristic LLM, word-hash embeddings), so the figures measure
the orchestration and the store, not a model. Prints a table, then one JSON line:
{"throughput_ratio", "p50_ms", "p95_ms", "llm_calls_per_formation", "embedding_calls_per_formation", ...}

    .venv/bin/python bench/formation.py [--sessions 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from temporalio.client import Client  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

from bench.common import dev_server  # noqa: E402
from bench.noop_chain import NoopChainWorkflow, noop  # noqa: E402
from client.memory_client import MemoryClient  # noqa: E402
from memory.deps import Deps  # noqa: E402
from memory.llm.heuristic import HeuristicProvider  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from memory.models import AgentConfig, MessageIn  # noqa: E402
from memory.settings import Settings, StoreSettings, TemporalSettings  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402
from tests.fakes import WordHashEmbedder  # noqa: E402
from worker import build_worker, workflow_runner  # noqa: E402
from workflows.summary import FormationSummary, calls_made  # noqa: E402

SAMPLE = json.loads((ROOT / "samples" / "conversation.json").read_text())


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run_formations(
    client: Client, tmp: Path, sessions: int
) -> tuple[list[float], float, list[FormationSummary], int]:
    settings = Settings(
        store=StoreSettings(sqlite_path=tmp / "mnemos.db"),
        temporal=TemporalSettings(
            task_queue=f"bench-{uuid.uuid4().hex[:6]}", search_attributes=False
        ),
    )
    store = SQLiteStore(settings.store.sqlite_path)
    await store.setup()
    deps = Deps(
        settings=settings, store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    memory = MemoryClient(client, store, settings, embedder=deps.embedder)
    agent = AgentConfig.model_validate(SAMPLE["agent"])
    await memory.register_agent(agent)
    for i in range(sessions + 1):
        msgs = [
            MessageIn.model_validate({**m, "message_id": f"{m['message_id']}-{i}"})
            for m in SAMPLE["messages"]
        ]
        await memory.record_messages(agent.agent_id, f"bench-{i}", msgs)
    latencies: list[float] = []
    summaries: list[FormationSummary] = []

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        summary = await memory.form_memories(agent.agent_id, f"bench-{i}", force=True, wait=True)
        latencies.append((time.perf_counter() - t0) * 1000)
        assert summary is not None
        summaries.append(summary)

    async with build_worker(client, deps, settings):
        # The sample alone on an empty store first: its LLM and embedding calls are the figures a
        # user of the sample sees (later sessions repeat its texts and hit the embedding cache).
        await one(0)
        sample = summaries.pop()
        latencies.clear()
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(1, sessions + 1)))
        wall = time.perf_counter() - t0
        history = await client.get_workflow_handle("form:eve:bench-0").fetch_history()
    # The formation's steps, scheduled or local (a marker each; the patch's is not a step): the
    # no-op chain runs as many, all scheduled, the simplest orchestration of the same steps.
    activities = sum(
        1
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        or (
            e.HasField("marker_recorded_event_attributes")
            and e.marker_recorded_event_attributes.marker_name == "core_local_activity"
        )
    )
    await store.close()
    return latencies, wall, [sample, *summaries], activities


async def run_noop_chains(client: Client, chains: int, steps: int) -> tuple[list[float], float]:
    queue = f"noop-{uuid.uuid4().hex[:6]}"
    latencies: list[float] = []

    async def one(i: int) -> None:
        t0 = time.perf_counter()
        await client.execute_workflow(
            NoopChainWorkflow.run, steps, id=f"noop-{queue}-{i}", task_queue=queue
        )
        latencies.append((time.perf_counter() - t0) * 1000)

    # The same workflow runner as the formation worker's (the settings' default): only the steps
    # differ between the two.
    runner = workflow_runner(Settings().temporal.workflow_sandbox)
    async with Worker(
        client,
        task_queue=queue,
        workflows=[NoopChainWorkflow],
        activities=[noop],
        workflow_runner=runner,
    ):
        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(chains)))
        return latencies, time.perf_counter() - t0


async def main(sessions: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env:
            f_lat, f_wall, summaries, activities = await run_formations(
                env.client, Path(tmp), sessions
            )
            n_lat, n_wall = await run_noop_chains(env.client, sessions, activities)
    f_tput, n_tput = sessions / f_wall, sessions / n_wall
    sample = summaries[0]
    llm, emb = calls_made(sample.llm_calls), sample.embedding_calls
    print(f"{'':22}{'per s':>8}{'p50 ms':>9}{'p95 ms':>9}")
    print(
        f"{'formations':22}{f_tput:8.2f}{percentile(f_lat, 0.5):9.0f}{percentile(f_lat, 0.95):9.0f}"
    )
    print(
        f"{f'no-op chains ({activities} act.)':22}{n_tput:8.2f}{percentile(n_lat, 0.5):9.0f}{percentile(n_lat, 0.95):9.0f}"
    )
    print(f"sample conversation alone: {sample.facts_added} facts, {sample.reflections_added} reflections, "
          f"{llm} LLM calls, {emb} embedding calls; {len(f_lat)} concurrent formations of it after that")  # fmt: skip
    return {
        "sessions": sessions,
        "activities_per_formation": activities,
        "formations_per_s": round(f_tput, 3),
        "noop_chains_per_s": round(n_tput, 3),
        "throughput_ratio": round(f_tput / n_tput, 3),
        "p50_ms": round(percentile(f_lat, 0.5), 1),
        "p95_ms": round(percentile(f_lat, 0.95), 1),
        "noop_p50_ms": round(percentile(n_lat, 0.5), 1),
        "noop_p95_ms": round(percentile(n_lat, 0.95), 1),
        "llm_calls_per_formation": llm,
        "embedding_calls_per_formation": emb,
    }


if __name__ == "__main__":
    configure_logging("warning")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=40)
    result = asyncio.run(main(parser.parse_args().sessions))
    print(json.dumps(result))
