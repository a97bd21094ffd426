"""How a dense backlog forms (issue #21): N messages of one user in one session, each stating one
fact ("My favourite number 17 is 119."), recorded at once, then one form_memories. A Temporal dev
server (file database) and one worker, the SQLite store, the offline heuristic LLM and the default
local embedder: default settings, as a new user runs them.

Prints progress, then one JSON line last:
{"messages", "record_seconds", "form_seconds", "cpu_seconds", "load_average", "formed_messages",
 "runs", "windows", "splits", "degraded", "valid_facts", "facts_with_their_number", "recall_at_10",
 "recall_sample"}

A long drain continues as new every few dozen windows: "runs" counts them, and the windows,
splits and degraded steps are summed over their memos. "cpu_seconds" is the CPU time of this
process and of the dev server while forming (the machine may be shared: "load_average" is the
1-minute load when forming ended).

    .venv/bin/python -m bench.backlog [--messages 10000] [--sample 200] [--seed 7]

"valid_facts" counts the valid facts of the user; "facts_with_their_number" how many of the N
statements have a valid fact holding both its numbers (a distinct fact merged into another is
missing here). "recall_at_10" is the share of ``--sample`` random statements whose fact is in the
top 10 of a search_facts for "favourite number {i}".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The worker runs in this process: imported before numpy, the cli package gives it the one BLAS
# thread `mnemos worker` has (cli/__init__.py).
import cli  # noqa: E402, F401
from bench.common import dev_server  # noqa: E402
from client.memory_client import MemoryClient  # noqa: E402
from memory.deps import Deps  # noqa: E402
from memory.embedding import make_embedder  # noqa: E402
from memory.llm.heuristic import HeuristicProvider  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from memory.models import AgentConfig, FactFilter, MessageIn  # noqa: E402
from memory.settings import Settings, StoreSettings, TemporalSettings  # noqa: E402
from memory.store.sqlite import SQLiteStore  # noqa: E402
from worker import build_worker  # noqa: E402

AGENT, USER, SESSION = "bench-agent", "una", "backlog"
# The API takes at most 1,000 messages per call (serve/schemas.py); the client is called likewise.
BATCH = 1000
_NUMBERS = re.compile(r"\d+")


def value_of(i: int) -> int:
    """A value that differs from every index, so a fact holds two distinct numbers."""
    return (i * 7919 + 13) % 100_003


def statements(n: int, start: datetime) -> list[MessageIn]:
    return [
        MessageIn(
            message_id=f"n{i}",
            role="user",
            content=f"My favourite number {i} is {value_of(i)}.",
            created_at=start + timedelta(milliseconds=i),
            user_id=USER,
            name="Una",
        )
        for i in range(n)
    ]


def cpu_seconds() -> float:
    """CPU time of this process and its children still running (the dev server), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in ["self", *[str(p) for p in _children()]]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def _children() -> list[int]:
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == me:
                found.append(int(entry.name))
    return found


async def runs_of(client: Any, workflow_id: str) -> list[dict[str, Any]]:
    """The memo of every run of the drain (a long one continues as new), once visibility shows
    them all closed."""
    for _ in range(100):
        runs = [r async for r in client.list_workflows(f'WorkflowId = "{workflow_id}"')]
        if runs and all(r.close_time is not None for r in runs):
            break
        await asyncio.sleep(0.1)  # visibility lags the close by a moment
    return [await r.memo() for r in runs]


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in _NUMBERS.findall(text))


async def main(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env:
            return await run(env.client, Path(tmp), args)


async def run(client: Any, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings(
        store=StoreSettings(sqlite_path=tmp / "mnemos.db"),
        temporal=TemporalSettings(
            task_queue=f"bench-{uuid.uuid4().hex[:6]}", search_attributes=False
        ),
    )
    store = SQLiteStore(settings.store.sqlite_path)
    await store.setup()
    embedder = make_embedder(settings)
    deps = Deps(settings=settings, store=store, llm=HeuristicProvider(), embedder=embedder)
    memory = MemoryClient(client, store, settings, embedder=embedder)
    await memory.register_agent(AgentConfig(agent_id=AGENT, name="Bench"))

    said = statements(args.messages, datetime.now(UTC) - timedelta(hours=2))
    t0 = time.perf_counter()
    for first in range(0, len(said), BATCH):
        await memory.record_messages(AGENT, SESSION, said[first : first + BATCH])
    recorded = time.perf_counter() - t0
    print(f"recorded {len(said)} messages in {recorded:.2f} s", flush=True)

    async with build_worker(client, deps, settings):
        t0, cpu0 = time.perf_counter(), cpu_seconds()
        handle = await memory._start_formation(AGENT, SESSION, force=True)
        await handle.result()
        formed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        load = os.getloadavg()[0]
    print(f"formed in {formed:.2f} s ({cpu:.1f} CPU s, load {load:.1f})", flush=True)
    memos = await runs_of(client, handle.id)
    for memo in memos:
        print(f"  run: {memo.get('summary')}", flush=True)

    facts = await store.recent_facts(
        FactFilter(agent_id=AGENT, user_id=USER),
        since=datetime.now(UTC) - timedelta(days=1),
        limit=args.messages * 2,
    )
    held = {numbers(f.content) for f in facts}
    with_number = sum(1 for i in range(args.messages) if (i, value_of(i)) in held)

    sample = random.Random(args.seed).sample(range(args.messages), min(args.sample, args.messages))
    found = 0
    for i in sample:
        result = await memory.search_facts(
            AGENT, f"favourite number {i}", session_id=SESSION, user_id=USER, top_k=10
        )
        found += any(numbers(hit.content) == (i, value_of(i)) for hit in result.hits)
    state = await store.get_session_agent_state(SESSION, AGENT)
    await embedder.close()
    await store.close()
    return {
        "messages": args.messages,
        "record_seconds": round(recorded, 2),
        "form_seconds": round(formed, 2),
        "cpu_seconds": round(cpu, 1),
        "load_average": round(load, 1),
        "formed_messages": state.cursor_seq if state else 0,
        "runs": len(memos),
        "windows": sum(int(m.get("formations", 0)) for m in memos),
        "splits": sum(int(m.get("splits", 0)) for m in memos),
        "degraded": sum(len(m.get("degraded", [])) for m in memos),
        "valid_facts": len(facts),
        "facts_with_their_number": with_number,
        "recall_at_10": round(found / len(sample), 3) if sample else 0.0,
        "recall_sample": len(sample),
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    configure_logging("warning")  # one line per activity would drown the figures
    print(json.dumps(asyncio.run(main(parser.parse_args()))))
