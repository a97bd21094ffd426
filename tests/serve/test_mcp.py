"""`mnemos mcp` through the official MCP client over stdio: the server is a real subprocess on
a SQLite store and the Temporal test server, with the local embedding model."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import TextContent
from temporalio.testing import WorkflowEnvironment

from client.management import MemoryManager
from memory.embedding import make_embedder
from memory.models import AgentConfig, ScopeKey
from memory.settings import EmbeddingSettings, Settings, StoreSettings
from memory.store.sqlite import SQLiteStore
from tests.store.builders import Former, add, msg, record
from tests.time_server import ends_with_the_test

ROOT = Path(__file__).resolve().parents[2]


def text_of(result: object) -> str:
    content = result.content  # type: ignore[attr-defined]
    assert isinstance(content[0], TextContent)
    return content[0].text


async def test_search_context_and_remember_over_stdio(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    db = tmp_path / "mnemos.db"
    settings = Settings(
        store=StoreSettings(sqlite_path=db), embedding=EmbeddingSettings(provider="local")
    )
    store = SQLiteStore(db)
    await store.setup()
    embedder = make_embedder(settings)
    try:
        await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
        batch = await embedder.embed(["Alice is vegetarian"])
        former = await Former(store, session_id="s1", agent_id="eve").start()
        # alice's user memory is alice's: she spoke in the session (#11).
        await record(store, "s1", "eve", [msg("alice-1", user_id="alice")])
        vector = [float(x) for x in batch.vectors[0]]
        await former.form(
            add("f1", "Alice is vegetarian", vector, user_id="alice"), model=batch.model
        )
        manager = MemoryManager(store, embedder, settings)
        await manager.edit_consolidated(
            ScopeKey(scope="agent", agent_id="eve"), "Eve speaks French."
        )
    finally:
        await embedder.close()
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(db),
        "MNEMOS_EMBEDDING__PROVIDER": "local",
        "MNEMOS_TEMPORAL__ADDRESS": time_env.client.service_client.config.target_host,
        "MNEMOS_TEMPORAL__TASK_QUEUE": "mcp-test",
        "MNEMOS_TEMPORAL__SEARCH_ATTRIBUTES": "false",
        "MNEMOS_LOG_LEVEL": "warning",
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "serve.commands", "mcp", "--agent", "eve"],
        env=env,
        cwd=ROOT,
    )
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name for t in (await session.list_tools()).tools}
            assert tools == {"search_facts", "memory_context", "remember"}

            found = await session.call_tool(
                "search_facts", {"query": ["Alice is vegetarian"], "user_id": "alice"}
            )
            assert "Alice is vegetarian" in text_of(found)
            other = await session.call_tool(
                "search_facts", {"query": ["Alice is vegetarian"], "user_id": "bob"}
            )
            assert "Alice" not in text_of(other)

            context = await session.call_tool("memory_context", {"session_id": "s2"})
            assert text_of(context).startswith("<MemoryContext")
            assert "Eve speaks French." in text_of(context)

            note = {
                "note": "Remember that I am allergic to nuts",
                "session_id": "s9",
                "user_id": "alice",
            }
            first = await session.call_tool("remember", note)
            assert text_of(first) == "noted; forming in form:eve:s9"
            assert text_of(await session.call_tool("remember", note)) == "already noted"

            bad = await session.call_tool("memory_context", {"session_id": "bad id!"})
            assert bad.is_error and "session_id" in text_of(bad)
        state = await store.get_session_agent_state("s9", "eve")
        assert state is not None and state.last_seq == 1
        handle = time_env.client.get_workflow_handle("form:eve:s9")
        assert (await handle.describe()).workflow_type == "FormMemories"
        # No worker here takes it: ended after the test, so the test server's clock is kept.
        ends_with_the_test(handle.id)
    finally:
        await store.close()
