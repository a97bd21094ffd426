"""GET /v1/agents/{agent}/users/{user}/export of a user with many facts is streamed: the server
answers other requests while it sends the file, holds a chunk of it rather than the whole, and a
failure midway leaves a body that `mnemos import file` refuses as truncated. The user's facts are
read a page at a time as the file is sent (store.export_facts): the store answers other reads
between pages, a fact changed meanwhile is in the file once, as it is then, and a store down at
the first page answers 503.

The export is watched at the ASGI ``send`` (httpx's ASGITransport only returns a response whole):
each body message is one chunk as the server hands it over."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from memory.errors import StoreUnavailableError
from memory.lifecycle import exporting
from memory.lifecycle.export import ExportFormatError, FactLine, HeaderLine, Record, read_export
from memory.lifecycle.records import FactImport, ImportBatch, SourceRef
from memory.lifecycle.writer import write_batch
from memory.store.base import MemoryStore
from memory.store.rules.export import EXPORT_PAGE, Exported
from tests.harness import T0, Harness
from tests.serve.conftest import Served

EXPORT = "/v1/agents/eve/users/alice/export"
N = 600  # facts: a file of about 1 MB, some sixteen chunks

OnBody = Callable[[Message], Awaitable[None]]


def _fact(i: int) -> FactImport:
    return FactImport(
        fact_id=f"f{i:06d}", agent_id="eve", user_id="alice", scope="user",
        content=f"Alice owns item number {i} of collection {i % 97} bought in town {i % 13}",
        formed_at=T0 + timedelta(seconds=i), updated_at=T0 + timedelta(seconds=i),
        source=SourceRef(system="mnemos", collection="facts", source_id=str(i)),
    )  # fmt: skip


async def _alice_owns(h: Harness, n: int = N) -> None:
    facts = tuple(_fact(i) for i in range(n))
    await write_batch(h.deps, ImportBatch(facts=facts), now=T0 + timedelta(days=1))


async def _sent(message: Message) -> None:
    """A body message on its way: nothing to watch."""


@asynccontextmanager
async def _watched(
    served: Served, on_body: OnBody, *, raise_app_exceptions: bool = True
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of eve's key whose export's body messages pass ``on_body`` on their way out."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        async def watched(message: Message) -> None:
            if message["type"] == "http.response.body":
                await on_body(message)
            await send(message)

        await served.app(scope, receive, watched)

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=raise_app_exceptions)
    headers = {"Authorization": f"Bearer {served.eve}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
        yield c


async def test_a_request_is_answered_while_a_big_export_is_sent(served: Served) -> None:
    """Held at its first chunk, as by a slow client, the export has more to send, and a GET of
    the agent meanwhile is answered; the file then arrives whole, in chunks of about
    CHUNK_CHARS (never the file at once), the same bytes `mnemos export` writes."""
    await _alice_owns(served.h)
    chunks: list[bytes] = []
    meanwhile: list[tuple[int, bool]] = []  # the GET's status, whether the export had more

    async def on_body(message: Message) -> None:
        chunks.append(message.get("body", b""))
        if len(chunks) == 1:
            async with served.client(served.eve) as other:
                r = await other.get("/v1/agents/eve")
            meanwhile.append((r.status_code, message.get("more_body", False)))

    async with _watched(served, on_body) as c:
        r = await c.get(EXPORT)

    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert meanwhile == [(200, True)]
    assert len(chunks) > 10, "one body: the export was built whole before a byte was sent"
    assert max(map(len, chunks)) < 2 * exporting.CHUNK_CHARS
    records = list(read_export(r.text.splitlines()))
    assert sum(isinstance(x, FactLine) for x in records) == N
    header = records[0]
    assert isinstance(header, HeaderLine)
    written = io.StringIO()
    await exporting.export_store(
        served.h.store, written, agent_id="eve", user_id="alice", messages=False,
        now=header.exported_at, states_of=("eve",),
    )  # fmt: skip
    assert r.text == written.getvalue()


async def test_a_big_export_gives_the_event_loop_back_between_chunks(served: Served) -> None:
    """Even to a client that takes every chunk at once, serialising the file is not one block of
    the event loop: another task runs between any two chunks (the server's other requests)."""
    await _alice_owns(served.h)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    at_chunk: list[int] = []

    async def on_body(message: Message) -> None:
        at_chunk.append(ticks)

    running = asyncio.create_task(ticker())
    try:
        async with _watched(served, on_body) as c:
            r = await c.get(EXPORT)
    finally:
        running.cancel()

    assert r.status_code == 200
    assert len(at_chunk) > 10, "one body: the export was built whole before a byte was sent"
    assert all(a < b for a, b in pairwise(at_chunk)), at_chunk


async def test_an_export_failing_midway_is_refused_as_truncated(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure after the first bytes (the status is sent) cuts the body before its end line:
    what the client saved is no export `mnemos import file` takes for whole."""
    await _alice_owns(served.h)
    records_of = exporting.records_of

    async def failing(*args: Any, **kwargs: Any) -> AsyncIterator[Record]:
        n = 0
        async for record in records_of(*args, **kwargs):
            if n == N // 2:
                raise RuntimeError("a record that does not serialise")
            n += 1
            yield record

    monkeypatch.setattr(exporting, "records_of", failing)

    async with _watched(served, _sent, raise_app_exceptions=False) as c:
        r = await c.get(EXPORT)

    assert r.status_code == 200 and r.text.startswith('{"type":"header"')
    with pytest.raises(ExportFormatError, match="no end line: the export is truncated"):
        list(read_export(r.text.splitlines()))


def _pages_read(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many facts each page the export reads of them holds, as read."""
    read = store.export_facts
    pages: list[int] = []

    async def export_facts(fact_ids: Sequence[str]) -> list[Exported]:
        pages.append(len(fact_ids))
        return await read(fact_ids)

    monkeypatch.setattr(store, "export_facts", export_facts)
    return pages


async def test_the_users_facts_are_read_a_page_at_a_time_as_the_export_is_sent(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At its first chunk the export has read one page of the user's facts, not all of them: it
    reads the next once that page is sent, and the store serves other reads meanwhile."""
    await _alice_owns(served.h, EXPORT_PAGE + 100)
    pages = _pages_read(served.h.store, monkeypatch)
    at_first_chunk: list[list[int]] = []

    async def on_body(message: Message) -> None:
        if not at_first_chunk:
            at_first_chunk.append(list(pages))

    async with _watched(served, on_body) as c:
        r = await c.get(EXPORT)

    assert r.status_code == 200
    assert at_first_chunk == [[EXPORT_PAGE]], "the store was read whole before the first byte"
    assert pages == [EXPORT_PAGE, 100]
    facts = [x for x in read_export(r.text.splitlines()) if isinstance(x, FactLine)]
    assert [f.fact_id for f in facts] == [f"f{i:06d}" for i in range(EXPORT_PAGE + 100)]


async def test_a_fact_invalidated_while_the_export_is_sent_is_in_it_once_as_it_is_now(
    served: Served,
) -> None:
    """Once the first chunk is sent, a fact of the user's on the page still to read is
    invalidated, and a new fact is stored for them: the file holds each fact it began with
    once, the invalidated one as it is now; the new one waits for the next export."""
    n = EXPORT_PAGE + 100
    await _alice_owns(served.h, n)
    changed = f"f{n - 50:06d}"
    chunks = 0

    async def on_body(message: Message) -> None:
        nonlocal chunks
        chunks += 1
        if chunks == 1:
            await served.h.store.invalidate_fact(changed, at=T0 + timedelta(days=2))
            await write_batch(served.h.deps, ImportBatch(facts=(_fact(n),)), now=T0)

    async with _watched(served, on_body) as c:
        r = await c.get(EXPORT)

    facts = [x for x in read_export(r.text.splitlines()) if isinstance(x, FactLine)]
    assert [f.fact_id for f in facts] == [f"f{i:06d}" for i in range(n)]
    assert [f.fact_id for f in facts if f.invalidated_at is not None] == [changed]


async def test_a_store_down_at_the_first_page_answers_503_and_at_a_later_one_cuts_the_body(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every read before the first byte: a store down answers 503 as on any route. Down at a
    later page of facts, the status is sent already: the body ends without its end line, which
    `mnemos import file` refuses as truncated."""
    await _alice_owns(served.h, EXPORT_PAGE + 100)
    read = served.h.store.export_facts
    pages_up = [0]  # how many pages the store reads before it goes down

    async def export_facts(fact_ids: Sequence[str]) -> list[Exported]:
        if pages_up[0] == 0:
            raise StoreUnavailableError()
        pages_up[0] -= 1
        return await read(fact_ids)

    monkeypatch.setattr(served.h.store, "export_facts", export_facts)
    async with served.client(served.eve) as c:
        down = await c.get(EXPORT)
    assert (down.status_code, down.json()["type"]) == (503, "urn:mnemos:problem:unavailable")

    pages_up[0] = 1
    async with _watched(served, _sent, raise_app_exceptions=False) as c:
        r = await c.get(EXPORT)
    assert r.status_code == 200 and r.text.startswith('{"type":"header"')
    with pytest.raises(ExportFormatError, match="no end line: the export is truncated"):
        list(read_export(r.text.splitlines()))
