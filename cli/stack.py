"""The local Temporal dev server of `make run`: the venv's `temporal` binary, a file database under
the data dir (WAL pragmas: ~3.5x faster than the default), the Web UI, our search attributes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from temporalio.client import Client

from cli.binaries import temporal_cli
from workflows.naming import ALL_KEYS


async def _answers(target: str) -> bool:
    """Whether the Temporal server at ``target`` answers a client's connect (its system info)."""
    try:
        await Client.connect(target)
    except RuntimeError:
        return False
    return True


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


def _spare_port(host: str, preferred: int) -> int:
    """``preferred`` when it can be bound, else one the OS picks: a port derived from the gRPC one
    may be some other process's already (a dev server on a random port, tests in parallel)."""
    with socket.socket() as s:
        try:
            s.bind((host, preferred))
        except OSError:
            s.bind((host, 0))
        return int(s.getsockname()[1])


def dev_server_command(data_dir: Path, *, host: str, port: int, ui_port: int) -> list[str]:
    # Ports of our choosing: otherwise start-dev opens random ones for metrics and the HTTP API;
    # next to the gRPC port when they are free (7243 and 7244 for `make run`).
    http_port, metrics_port = _spare_port(host, port + 10), _spare_port(host, port + 11)
    cmd = [
        str(temporal_cli()), "server", "start-dev",
        "--ip", host, "--port", str(port), "--ui-port", str(ui_port),
        "--db-filename", str(data_dir / "temporal.db"),
        "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=1",
        "--ui-disable-news-fetch", "--log-level", "warn",
        "--http-port", str(http_port), "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    for key in ALL_KEYS:
        cmd += ["--search-attribute", f"{key.name}=Keyword"]
    return cmd


@contextlib.asynccontextmanager
async def dev_server(
    data_dir: Path, *, host: str = "127.0.0.1", port: int = 7233, ui_port: int = 8233
) -> AsyncIterator[bool]:
    """Start the dev server unless one already listens on the port (then reuse it). Yields whether we
    started it; stops what we started, waiting for it to exit so the next start can take the port."""
    if _port_open(host, port):
        yield False
        return
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    log_path = data_dir / "temporal.log"
    log = await asyncio.to_thread(log_path.open, "ab")
    cmd = dev_server_command(data_dir, host=host, port=port, ui_port=ui_port)
    # The server reads OTEL_* too, and refuses to start on an exporter it lacks ("console"):
    # those variables configure mnemos' traces (runtime.tracing), not the dev server's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=log, stderr=log, env=env)
    try:
        for _ in range(150):  # up to 30 s; healthy in ~0.5 s on these machines
            if proc.returncode is not None:
                raise RuntimeError(
                    f"temporal dev server exited with {proc.returncode}; see {log_path}"
                )
            # An open port is not yet a server that answers: on a loaded machine a client
            # connecting right then failed ("Failed client connect"), so wait for an answer.
            if _port_open(host, port) and await _answers(f"{host}:{port}"):
                break
            await asyncio.sleep(0.2)
        else:
            raise TimeoutError("temporal dev server did not answer within 30 s")
        yield True
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 15)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        log.close()
