"""Many agents' backends at once over HTTP, against a live stack (bench/live_stack.py): message
ingest with formations running, context reads and searches, for a fixed time. (Named http_load:
a script in bench/ named http would shadow the standard library for every bench.)

    .venv/bin/python bench/http_load.py --clients 50 --seconds 30 --servers 2 --workers 1

Each client is one agent backend's session loop: it records a user and an agent message
(formation triggered at the thresholds, as a backend does after each turn), reads the memory
context for the next turn, and searches. Prints per route: requests, throughput, p50/p99 latency;
messages ingested per second; the error count (any non-2xx answer or transport error).
Targets (2 cores): 50 clients, 0 errors, context p99 <= 25 ms, search p99 <= 60 ms, ingest >= 300
messages/s.

By default a client sends its next request the moment the previous one answers (a closed loop: it
measures the service saturated, and its latencies are mostly queueing). ``--think S`` makes each
client pause S seconds after each turn, as an agent does while its LLM writes the next answer:
the latencies then measure a service carrying that many live agents. ``--routes ingest`` sends
only the messages (ingest capacity with formations running); the default sends all three.

    .venv/bin/python bench/http_load.py --clients 50 --think 2 --seconds 60
    .venv/bin/python bench/http_load.py --clients 50 --routes ingest --seconds 30

All clients share one API key, so the server's default per-key budgets apply to all of them
together (MNEMOS_RATE_LIMIT__*: 200 reads and 100 writes per second and server process, bursts of
400 and 200; this machine serves far less). A 429 counts as an error and is also counted apart:
raise the budgets in the environment of this script (the stack inherits it) to measure beyond.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder heads sys.path, and this very file would then shadow the
# standard library's ``http`` package (httpx imports it): the repository root goes there instead.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import asyncio  # noqa: E402
import itertools  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

import httpx  # noqa: E402

from bench.live_stack import live_stack  # noqa: E402
from memory.settings import get_settings  # noqa: E402

AGENT = "bench-agent"
TOPICS = ["tea", "cycling", "Lisbon", "piano", "the garden", "chess", "hiking", "Python"]


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    messages: int = 0
    rate_limited: int = 0
    formations: int = 0
    samples: list[str] = field(default_factory=list)

    counting_from: float = 0.0  # requests started before (the warm-up) are not counted

    def record(self, route: str, started: float, response: httpx.Response | None) -> bool:
        ok = response is not None and response.is_success
        if started < self.counting_from:
            return ok
        self.latencies[route].append(time.perf_counter() - started)
        if not ok:
            self.errors[route] += 1
            self.rate_limited += response is not None and response.status_code == 429
            if len(self.samples) < 5:
                text = "transport error" if response is None else response.text[:200]
                self.samples.append(f"{route}: {text}")
        return ok


async def _call(
    http: httpx.AsyncClient, tally: Tally, route: str, method: str, url: str, **kw: object
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await http.request(method, url, **kw)  # type: ignore[arg-type]
    except httpx.HTTPError:
        response = None
    tally.record(route, started, response)
    return response


def _turns_per_formation() -> int:
    """Turns (a user and an agent message each) that reach the formation's message interval."""
    return -(-get_settings().formation.message_interval // 2)


def _turn(n: int, turn: int, user: str, session: str) -> list[dict[str, str]]:
    topic = TOPICS[(n + turn) % len(TOPICS)]
    now = datetime.now(UTC).isoformat()
    return [
        {
            "message_id": f"{session}-{turn}-u",
            "role": "user",
            "content": f"I really enjoy {topic}; I practise it every week since {2000 + turn}.",
            "created_at": now,
            "user_id": user,
        },
        {
            "message_id": f"{session}-{turn}-a",
            "role": "agent",
            "content": f"Noted that you enjoy {topic}.",
            "created_at": now,
        },
    ]


async def client(
    n: int, base: str, key: str, until: float, tally: Tally, args: argparse.Namespace
) -> None:
    user, session = f"user-{n}", f"session-{n}"
    headers = {"Authorization": f"Bearer {key}"}
    prefix = f"{base}/v1/agents/{AGENT}"
    routes = set(args.routes.split(","))
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        # Sessions already under way, each at its own point: client n has recorded n/clients of a
        # formation's worth of turns, so thresholds are reached evenly over time, not by every
        # session at once (in the warm-up, not counted).
        prefill = n * _turns_per_formation() // args.clients
        if prefill:
            done = [m for t in range(prefill) for m in _turn(n, t, user, session)]
            await _call(
                http, tally, "ingest", "POST", f"{prefix}/sessions/{session}/messages",
                json={"messages": done},
            )  # fmt: skip
        if args.think:  # agents start at different moments, not in one burst
            await asyncio.sleep(args.think * n / args.clients)
        for turn in itertools.count(prefill):
            if time.perf_counter() >= until:
                return
            messages = _turn(n, turn, user, session)
            r = await _call(
                http, tally, "ingest", "POST", f"{prefix}/sessions/{session}/messages",
                json={"messages": messages},
            )  # fmt: skip
            if r is not None and r.is_success and time.perf_counter() >= tally.counting_from:
                tally.messages += r.json()["recorded"]["inserted"]
                tally.formations += bool((r.json()["formation"] or {}).get("started"))
            if "context" in routes:
                await _call(
                    http, tally, "context", "GET", f"{prefix}/sessions/{session}/context",
                    params={"user_id": user},
                )  # fmt: skip
            if "search" in routes:
                await _call(
                    http, tally, "search", "POST", f"{prefix}/search",
                    json={"queries": [f"what does the user enjoy about {TOPICS[(n + turn) % len(TOPICS)]}?"],
                          "user_id": user, "session_id": session},
                )  # fmt: skip
            if args.think:
                await asyncio.sleep(args.think)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def report(tally: Tally, seconds: float, args: argparse.Namespace) -> None:
    print(
        f"{args.clients} clients, {args.servers} server process(es), {args.workers} worker(s) "
        f"at nice {args.worker_nice}, "
        f"think {args.think:g} s, routes {args.routes}, {seconds:.1f} s counted after a "
        f"{args.warmup:g} s warm-up"
    )
    print(f"{'route':<9}{'requests':>9}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for route in ("ingest", "context", "search"):
        lat = tally.latencies[route]
        if not lat:
            continue
        print(
            f"{route:<9}{len(lat):>9}{len(lat) / seconds:>9.1f}{_pct(lat, 0.5):>9.1f}"
            f"{_pct(lat, 0.99):>9.1f}{tally.errors[route]:>8}"
        )
    total = sum(tally.errors.values())
    print(
        f"ingest: {tally.messages / seconds:.0f} messages/s; formations started: {tally.formations}"
    )
    print(
        f"errors: {total} (429 over the key's budget: {tally.rate_limited})"
        + "".join(f"\n  {s}" for s in tally.samples)
    )
    if tally.latencies["context"]:
        print(f"mean context latency {statistics.mean(tally.latencies['context']) * 1000:.1f} ms")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="mnemos-bench-http-") as tmp:
        async with live_stack(
            Path(tmp),
            AGENT,
            workers=args.workers,
            servers=args.servers,
            worker_nice=args.worker_nice,
        ) as stack:
            async with httpx.AsyncClient(
                headers={"Authorization": f"Bearer {stack.api_key}"}
            ) as http:
                r = await http.post(
                    f"{stack.urls[0]}/v1/agents", json={"agent_id": AGENT, "name": "Bench"}
                )
                r.raise_for_status()
            started = time.perf_counter()
            # The warm-up (first query embeddings, connections, caches) is run, not counted.
            tally = Tally(counting_from=started + args.warmup)
            until = tally.counting_from + args.seconds
            await asyncio.gather(
                *(
                    client(n, stack.urls[n % len(stack.urls)], stack.api_key, until, tally, args)
                    for n in range(args.clients)
                )
            )
            report(tally, time.perf_counter() - tally.counting_from, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--worker-nice", type=int, default=0, help="run the workers at this nice level"
    )
    parser.add_argument(
        "--warmup", type=float, default=10.0, help="seconds run first and not counted"
    )
    parser.add_argument(
        "--think", type=float, default=0.0, help="seconds each client pauses after a turn"
    )
    parser.add_argument(
        "--routes",
        default="ingest,context,search",
        help="ingest is always sent; add context, search",
    )
    asyncio.run(main(parser.parse_args()))
