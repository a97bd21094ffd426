"""A live mnemos on free ports, as a deployment runs it: a Temporal dev server, worker processes,
``mnemos serve`` processes over one SQLite store, and an API key that may erase.

    python -m bench.live_stack --agent ts-agent -- node --test dist/test/

runs the command with ``MNEMOS_URL`` (the first server), ``MNEMOS_URLS`` (all of them, comma
separated) and ``MNEMOS_API_KEY`` set, then stops everything; its exit code is the command's.
The LLM is the offline ``heuristic`` provider, embeddings the local MiniLM model.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

from cli.stack import dev_server

READY_SECONDS = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _mnemos() -> str:
    return str(Path(sys.executable).with_name("mnemos"))


@dataclass
class Stack:
    urls: list[str]
    api_key: str
    env: dict[str, str]


async def _ready(url: str, procs: Sequence[asyncio.subprocess.Process]) -> None:
    """Poll /readyz: the server is a separate process, there is nothing to await but its answer."""
    async with httpx.AsyncClient() as http, asyncio.timeout(READY_SECONDS):
        while True:
            if any(p.returncode is not None for p in procs):
                raise RuntimeError("a mnemos process exited during start-up (see its log)")
            with contextlib.suppress(httpx.HTTPError):
                if (await http.get(f"{url}/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.2)


@contextlib.asynccontextmanager
async def live_stack(
    data_dir: Path, agent_id: str, *, workers: int = 1, servers: int = 1, worker_nice: int = 0
) -> AsyncIterator[Stack]:
    """``worker_nice``: the workers' CPU priority below the API's (nice), as an operator sharing
    cores between them would set it."""
    temporal_port = free_port()
    env = {
        **os.environ,
        "MNEMOS_STORE__SQLITE_PATH": str(data_dir / "mnemos.db"),
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{temporal_port}",
        "MNEMOS_TEMPORAL__TASK_QUEUE": f"live-{uuid.uuid4().hex[:8]}",
        "MNEMOS_TEMPORAL__METRICS_BIND": "",  # never the fixed metrics port
        "MNEMOS_MODELS__PROVIDER": "heuristic",
        "MNEMOS_EMBEDDING__PROVIDER": "local",
    }
    procs: list[asyncio.subprocess.Process] = []
    logs = [(data_dir / f"{name}.log").open("ab") for name in ("worker", "serve")]
    async with dev_server(data_dir, port=temporal_port, ui_port=free_port()):
        try:
            key = subprocess.run(
                [_mnemos(), "keys", "create", "--agent", agent_id, "--erase", "--name", "live"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            for _ in range(workers):
                procs.append(
                    await asyncio.create_subprocess_exec(
                        *(["nice", "-n", str(worker_nice)] if worker_nice else []),
                        *(_mnemos(), "worker"),
                        env=env,
                        stdout=logs[0],
                        stderr=logs[0],
                    )
                )
            urls = []
            for _ in range(servers):
                port = free_port()
                urls.append(f"http://127.0.0.1:{port}")
                procs.append(
                    await asyncio.create_subprocess_exec(
                        *(_mnemos(), "serve", "--port", str(port)),
                        env=env,
                        stdout=logs[1],
                        stderr=logs[1],
                    )
                )
            for url in urls:
                await _ready(url, procs)
            yield Stack(urls=urls, api_key=key, env=env)
        finally:
            for proc in procs:
                if proc.returncode is None:
                    proc.terminate()
            for proc in procs:
                await proc.wait()
            for log in logs:
                log.close()


async def _run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="mnemos-live-") as tmp:
        async with live_stack(
            Path(tmp), args.agent, workers=args.workers, servers=args.servers
        ) as stack:
            env = {
                **stack.env,
                "MNEMOS_URL": stack.urls[0],
                "MNEMOS_URLS": ",".join(stack.urls),
                "MNEMOS_API_KEY": stack.api_key,
                "MNEMOS_AGENT": args.agent,
            }
            proc = await asyncio.create_subprocess_exec(*args.command, env=env, cwd=args.cwd)
            return await proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="live-agent")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--cwd", default=None)
    parser.add_argument("command", nargs="+")
    sys.exit(asyncio.run(_run(parser.parse_args())))


if __name__ == "__main__":
    main()
