"""The HTTP app on a seeded store, for tests whose client is synchronous (Schemathesis).

The app, its store, its Temporal client and a worker all live on one event loop in a thread of
their own (asyncio objects belong to the loop that made them); ``bridged`` hands each request
over to that loop. Seed: agent eve with a formed session s1 of user alice (facts, reflections),
a read-write key for eve, the formation test bench's scripted LLM and word-hash embeddings.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from temporalio.client import Client
from temporalio.worker import Worker

from memory.api_keys import ApiKey, digest
from runtime.payloads import payload_data_converter
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness
from tests.serve.conftest import form_alice

WAIT_SECONDS = 120.0
# A fixed key (only in this test's store): a test whose requests are generated at import time
# (Schemathesis' pytest integration) must know it before the app exists.
KEY_ID, KEY_SECRET = "contract", "contract-secret-0123456789"
TOKEN = f"mk_{KEY_ID}_{KEY_SECRET}"


class LoopThread:
    """An event loop running in a daemon thread; ``run`` waits for a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def run[T](self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(WAIT_SECONDS)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def bridged(app: ASGIApp, owner: LoopThread) -> ASGIApp:
    """An ASGI app that serves each HTTP request with ``app`` on ``owner``'s loop."""

    async def serve(scope: Scope, messages: list[Message]) -> list[Message]:
        pending = list(messages)
        sent: list[Message] = []

        async def receive() -> Message:
            if pending:
                return pending.pop(0)
            await asyncio.Event().wait()  # the client never disconnects mid-request
            raise AssertionError("unreachable")

        async def send(message: Message) -> None:
            sent.append(message)

        await app(scope, receive, send)
        return sent

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # the app's resources are the fixture's, not the client's
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        messages = [await receive()]
        while messages[-1].get("more_body"):
            messages.append(await receive())
        future = asyncio.run_coroutine_threadsafe(serve(scope, messages), owner.loop)
        for message in await asyncio.wrap_future(future):
            await send(message)

    return call


class _Env:
    """What Harness.create reads of a WorkflowEnvironment: its client."""

    def __init__(self, client: Client) -> None:
        self.client = client


@dataclass
class SeededApp:
    app: FastAPI
    asgi: ASGIApp
    token: str  # read-write key for eve
    owner: LoopThread
    h: Harness
    worker: Worker
    worker_task: asyncio.Task[None]

    def close(self) -> None:
        async def stop() -> None:
            await self.worker.shutdown()
            await self.worker_task
            await self.h.store.close()

        self.owner.run(stop())
        self.owner.stop()


def seeded_app(temporal_address: str, tmp_path: Path) -> SeededApp:
    owner = LoopThread()

    async def build() -> SeededApp:
        client = await Client.connect(temporal_address, data_converter=payload_data_converter)
        h = await Harness.create(_Env(client), tmp_path)  # type: ignore[arg-type]
        await form_alice(h)  # with a worker of its own, stopped when it returns
        worker = h.worker()
        task = asyncio.get_running_loop().create_task(worker.run())
        key = ApiKey(
            key_id=KEY_ID,
            name="contract",
            agent_ids=("eve",),
            secret_sha256=digest(KEY_SECRET),
            created_at=datetime.now(UTC),
        )
        await h.store.create_api_key(key)
        app = create_app(h.memory, StoreKeyStore(h.store), temporal_ui_url="http://ui.test")
        return SeededApp(app, bridged(app, owner), TOKEN, owner, h, worker, task)

    return owner.run(build())
