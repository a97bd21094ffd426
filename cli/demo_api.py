"""The HTTP API and memory page of `mnemos up` (`make run`), next to the demo.

Serves ``serve.app`` on 127.0.0.1 (port 8000 unless ``--api-port``/MNEMOS_API_PORT says
otherwise; 0 turns it off) over the demo's own client, with the keys in the store, and keeps a
development API key for the demo agent in the data dir: the store holds only its hash, so the
file is what lets a second run print the same key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from client.memory_client import MemoryClient
from serve.app import create_app
from serve.keys import ApiKeyStore, StoreKeyStore

HOST = "127.0.0.1"
DEV_KEY_FILE = "dev_api_key"


async def dev_api_key(keys: ApiKeyStore, data_dir: Path, agent_id: str) -> str:
    """The key kept in ``data_dir``, when it still verifies for the agent; else a new one, kept."""
    path = data_dir / DEV_KEY_FILE
    token = await asyncio.to_thread(_read, path)
    if token:
        key = await keys.verify(token)
        if key is not None and key.allows(agent_id, write=True):
            return token
    _, token = await keys.create([agent_id], name="development key (mnemos up)", can_erase=True)
    await asyncio.to_thread(_write, path, token)
    return token


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""


def _write(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")


@dataclass(frozen=True)
class Served:
    url: str | None  # None: not served (turned off, or the port is taken)
    token: str
    note: str = ""

    def announcement(self, agent_id: str, session_id: str, user_id: str | None) -> str:
        if self.url is None:
            return self.note
        context = f"{self.url}/v1/agents/{agent_id}/sessions/{session_id}/context"
        if user_id:
            context += f"?user_id={user_id}"
        return (
            f"{self.url}  (memory page: {self.url}/ui, API docs: {self.url}/docs)\n"
            f"Development API key for agent {agent_id} (kept in {DEV_KEY_FILE} in the data dir):\n"
            f"{self.token}\n"
            f'Try: curl -H "Authorization: Bearer {self.token}" "{context}"'
        )


class _Server(uvicorn.Server):
    """Leaves SIGINT/SIGTERM to `mnemos up`, which stops the server with everything else."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _bind(port: int) -> socket.socket | None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
        # Listening from here on: a request sent before the server's startup completes waits in
        # the backlog instead of being refused.
        sock.listen(128)
    except OSError:
        sock.close()
        return None
    return sock


@contextlib.asynccontextmanager
async def serving_api(
    memory: MemoryClient, data_dir: Path, *, agent_id: str, port: int
) -> AsyncIterator[Served]:
    """Serve the API and page for as long as the block runs (nothing when ``port`` is 0)."""
    keys = StoreKeyStore(memory.store)
    token = await dev_api_key(keys, data_dir, agent_id)
    sock = _bind(port) if port else None
    if sock is None:
        why = "turned off (--api-port 0)" if not port else f"port {port} is taken (--api-port)"
        yield Served(None, token, f"Not served: {why}. Development API key: {token}")
        return
    app = create_app(memory, keys)
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    server = _Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        yield Served(f"http://{HOST}:{sock.getsockname()[1]}", token)
    finally:
        server.should_exit = True
        await task
        sock.close()
