"""Issue #12 case 2 as a bench: one stored fact "The project deadline is March 1, 2024.", then N
sessions of one agent each state a new deadline and form at once, on a real dev server (file
database) with the heuristic provider and the SQLite store (or PostgreSQL, MongoDB: --backend).
Prints the completion time, the stale decisions decided again, and what the agent ends with; then
one JSON line.

The worker runs in this process on the bench's store object, so every backend works, mongoeco
too: without MONGODB_URI, --backend mongo serves the store from mongoeco, an in-memory Python
emulation of the wire protocol in this process (tests/mongo_server.py), whose latencies (and
transaction conflicts) are the emulation's, not a MongoDB server's.

    .venv/bin/python bench/contention.py [--sessions 12] [--backend sqlite|postgres|mongo]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import BACKEND_HELP, BACKENDS, bench_store, dev_server  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from tests.liveness.bench_setup import Bench, bench_settings  # noqa: E402


async def main(sessions: int, backend: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env, bench_store(backend, Path(tmp), "mnemos") as store:
            bench = Bench(env.client, store, bench_settings())
            await bench.setup()
            async with bench.worker():
                started = time.perf_counter()
                summaries = await bench.contend(sessions)
                seconds = time.perf_counter() - started
            valid = [f for f in await bench.facts() if "deadline" in f.content]
            states = [
                await store.get_session_agent_state(f"s-{i:02d}", "eve") for i in range(sessions)
            ]
    result = {
        "backend": backend,
        "sessions": sessions,
        "completed": sum(1 for s in summaries if s.formations == 1),
        "seconds": round(seconds, 2),
        "decisions_redone": sum(s.decisions_redone for s in summaries),
        "max_redone_per_session": max(s.decisions_redone for s in summaries),
        "unformed_messages": sum(s.pending_messages for s in states if s is not None),
        "valid_deadline_facts": len(valid),
        "versions_of_the_fact": valid[0].version if len(valid) == 1 else None,
    }
    print(
        f"{result['completed']}/{sessions} formations completed in {seconds:.2f} s "
        f"(the first deadline formed before the clock started); "
        f"{result['decisions_redone']} stale decisions decided again "
        f"(at most {result['max_redone_per_session']} in one session); "
        f"{result['unformed_messages']} messages unformed; "
        f"{len(valid)} valid deadline fact(s), version {result['versions_of_the_fact']}"
    )
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=12)
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite", help=BACKEND_HELP)
    args = parser.parse_args()
    configure_logging("warning")
    print(json.dumps(asyncio.run(main(args.sessions, args.backend))))
