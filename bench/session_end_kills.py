"""on_session_end under a kill loop (issue #12 case 4): a real worker process is killed with
SIGKILL every few seconds and started again, while sessions end one after another on a real dev
server (file database). Production retry settings (store steps heartbeat every few seconds, LLM
steps have a 20 s heartbeat timeout); heuristic provider, word-hash embeddings, SQLite store.
Prints p50/max of on_session_end and how many kills it survived; then one JSON line.

    .venv/bin/python bench/session_end_kills.py [--sessions 20] [--kill-every 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import dev_server  # noqa: E402
from client.memory_client import MemoryClient  # noqa: E402
from memory.logging import configure_logging  # noqa: E402
from memory.models import AgentConfig, MessageIn, ScopeKey  # noqa: E402
from memory.settings import (  # noqa: E402
    RetrySettings,
    Settings,
    StoreSettings,
    TemporalSettings,
)
from memory.store.sqlite import SQLiteStore  # noqa: E402
from tests.fakes import WordHashEmbedder  # noqa: E402

SAMPLE = json.loads((ROOT / "samples" / "conversation.json").read_text())


class Workers:
    """One worker process at a time (tests/crash_worker.py, its LLM gate left open)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen[bytes] | None = None
        self.kills = 0

    def spawn(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.crash_worker"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.kills += 1

    async def loop(self, every: float, stop: asyncio.Event) -> None:
        rng = random.Random(7)
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=every * rng.uniform(0.5, 1.5))
            except TimeoutError:
                self.kill()
                self.spawn()


def session_messages(i: int) -> list[MessageIn]:
    out = []
    for m in SAMPLE["messages"]:
        m = {**m, "message_id": f"{m['message_id']}-{i}"}
        out.append(MessageIn.model_validate(m))
    return out


async def main(sessions: int, kill_every: float, llm_heartbeat: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with dev_server(Path(tmp)) as env:
            settings = Settings(
                store=StoreSettings(sqlite_path=Path(tmp) / "mnemos.db"),
                retries=RetrySettings(llm_heartbeat_seconds=llm_heartbeat),
                temporal=TemporalSettings(
                    address=env.client.service_client.config.target_host,
                    task_queue=f"kills-{uuid.uuid4().hex[:8]}",
                    search_attributes=False,
                ),
            )
            store = SQLiteStore(settings.store.sqlite_path)
            await store.setup()
            memory = MemoryClient(env.client, store, settings, embedder=WordHashEmbedder())
            agent = AgentConfig.model_validate(SAMPLE["agent"])
            await memory.register_agent(agent)
            (Path(tmp) / "release").touch()  # the crash worker's LLM gate stays open
            workers = Workers(
                {
                    **os.environ,
                    "MNEMOS_STORE__SQLITE_PATH": str(settings.store.sqlite_path),
                    "MNEMOS_TEMPORAL__ADDRESS": settings.temporal.address,
                    "MNEMOS_TEMPORAL__TASK_QUEUE": settings.temporal.task_queue,
                    "MNEMOS_TEMPORAL__SEARCH_ATTRIBUTES": "false",
                    "MNEMOS_TEMPORAL__SCHEDULE_ON_START": "false",
                    "MNEMOS_TEMPORAL__METRICS_BIND": "",
                    "MNEMOS_LOG_LEVEL": "warning",
                    "CRASH_GATE_DIR": tmp,
                    "CRASH_GATE_TASK": "none",
                }
            )
            workers.spawn()
            stop = asyncio.Event()
            killer = asyncio.create_task(workers.loop(kill_every, stop))
            took: list[float] = []
            formed = emptied = 0
            try:
                for i in range(sessions):
                    session = f"s{i:03d}"
                    await memory.record_messages(agent.agent_id, session, session_messages(i))
                    started = time.perf_counter()
                    ended = await memory.on_session_end(agent.agent_id, session)
                    took.append(time.perf_counter() - started)
                    formed += ended.formation.messages_formed
                    key = ScopeKey.session(agent.agent_id, session)
                    emptied += int(await store.count_unabsorbed(key) == 0)
                    print(f"  {session}: {took[-1]:6.2f} s ({workers.kills} kills so far)")
            finally:
                stop.set()
                await killer
                workers.kill()
            unformed = 0
            for i in range(sessions):
                state = await store.get_session_agent_state(f"s{i:03d}", agent.agent_id)
                unformed += state.pending_messages if state else 0
            await store.close()
    result = {
        "sessions": sessions,
        "kill_every_s": kill_every,
        "kills": workers.kills,
        "p50_s": round(statistics.median(took), 2),
        "max_s": round(max(took), 2),
        "messages_formed": formed,
        "unformed_messages": unformed,
        "session_buffers_emptied": emptied,
        "llm_heartbeat_s": llm_heartbeat,
    }
    print(
        f"on_session_end under a kill every ~{kill_every:g} s ({workers.kills} kills): "
        f"p50 {result['p50_s']} s, max {result['max_s']} s; "
        f"{unformed} messages left unformed, {emptied}/{sessions} session buffers consolidated "
        f"(LLM heartbeat timeout {llm_heartbeat:g} s)"
    )
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--kill-every", type=float, default=4.0)
    parser.add_argument(
        "--llm-heartbeat", type=float, default=20.0, help="retries.llm_heartbeat_seconds"
    )
    args = parser.parse_args()
    configure_logging("warning")
    print(json.dumps(asyncio.run(main(args.sessions, args.kill_every, args.llm_heartbeat))))
