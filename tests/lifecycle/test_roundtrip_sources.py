"""Export → import keeps where a fact was said findable: the memory page of the imported store
shows a fact's messages, as the original's does. A formation id names its session's incarnation
by the session's creation time (memory.ids.formation_id), so the import creates each session at
the time the export carries, not at its first message's."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
from temporalio.testing import WorkflowEnvironment

from client.memory_client import MemoryClient
from memory import ids
from memory.deps import Deps
from memory.lifecycle.export import read_export, to_import
from memory.lifecycle.exporting import export_store
from memory.lifecycle.writer import write_batch
from memory.models import StoredMessage
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from serve.app import create_app
from serve.keys import StoreKeyStore
from tests.harness import Harness
from tests.serve.conftest import form_alice
from tests.store.builders import at, msg, record

NOW = datetime(2026, 11, 22, tzinfo=UTC)


async def _export(store: MemoryStore) -> list[str]:
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=True, now=NOW)
    return out.getvalue().splitlines()


async def _imported(h: Harness, lines: list[str], path: Path) -> SQLiteStore:
    empty = SQLiteStore(path)
    await empty.setup()
    deps = Deps(settings=h.settings, store=empty, llm=h.llm, embedder=h.embedder)
    await write_batch(deps, to_import(read_export(lines)), now=datetime.now(UTC))
    return empty


async def _fact_page(h: Harness, store: MemoryStore, fact_id: str) -> str:
    keys = StoreKeyStore(store)
    _, token = await keys.create(["eve"], name="eve")
    memory = MemoryClient(h.client, store, h.settings, embedder=h.embedder)
    app = create_app(memory, keys, temporal_ui_url="http://ui.test")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://test",
        cookies={"mnemos_key": token},
    ) as c:
        page = await c.get(f"/ui/agents/eve/facts/{fact_id}")
    assert page.status_code == 200
    return page.text.split('id="sources"')[1].split("</table>")[0]


async def test_an_imported_fact_shows_the_messages_it_was_said_in(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # Recorded now, the messages said at the harness's fixed T0: the session's creation time is
    # not its first message's.
    h = await Harness.create(time_env, tmp_path)
    await form_alice(h)
    fact = next(f for f in await h.all_facts() if f.scope == "user")
    original = await h.store.get_session("s1")
    assert original is not None and fact.formation_id is not None
    assert "message 0 from the user" in await _fact_page(h, h.store, fact.fact_id)
    lines = await _export(h.store)
    copy = await _imported(h, lines, tmp_path / "copy.db")

    sources = await _fact_page(h, copy, fact.fact_id)

    assert "message 0 from the user" in sources and "message 2 from the user" in sources
    assert "no longer stored" not in sources
    session = await copy.get_session("s1")
    assert session is not None and session.created_at == original.created_at
    assert ids.formed_in(fact.formation_id, "s1", session.created_at) is True
    await copy.close()


async def test_an_export_without_session_times_imports_as_before(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A file written before the field: the session is created at its first message's time."""
    h = await Harness.create(time_env, tmp_path)
    await form_alice(h)
    old = []
    for line in await _export(h.store):
        record_ = json.loads(line)
        assert record_["type"] != "message" or record_.pop("session_created_at") is not None
        old.append(json.dumps(record_))
    copy = await _imported(h, old, tmp_path / "old.db")
    [first] = await copy.get_messages("s1", ["m0000"])
    session = await copy.get_session("s1")
    assert session is not None and session.created_at == first.created_at
    await copy.close()


def _stored(m_id: str, seq: int, seconds: float) -> StoredMessage:
    return StoredMessage(
        session_id="s1", seq=seq, message_id=m_id, role="user", content=f"said {m_id}",
        created_at=at(seconds), user_id="u1", agent_id="a1",
    )  # fmt: skip


async def test_a_stored_session_keeps_its_own_creation_time(store: MemoryStore) -> None:
    await record(store, "s1", "a1", [msg("m1", "said m1", seconds=10)], now_seconds=50)
    stored = await store.get_session("s1")
    assert stored is not None and stored.created_at == at(50)
    file = [_stored("m1", 1, 10), _stored("m2", 2, 20)]

    counts = await store.import_messages(file, sessions_created={"s1": at(5)})

    assert counts.inserted == 1
    kept = await store.get_session("s1")
    assert kept is not None and kept.created_at == at(50)
    # A new session is created at the time given.
    new = [m.model_copy(update={"session_id": "s2"}) for m in file]
    await store.import_messages(new, sessions_created={"s2": at(5)})
    created = await store.get_session("s2")
    assert created is not None and created.created_at == at(5)
