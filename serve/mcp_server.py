"""`mnemos mcp`: one agent's memory as MCP tools over stdio (the official ``mcp`` package).

Tools: ``search_facts`` (the same search and text the agent's own tool call gets),
``memory_context`` (the ``<MemoryContext>`` XML for a turn) and ``remember``: an explicit note is
recorded as a message of the session, like any other, and a formation of that session is
started at once (below the thresholds, as "form now" does); the note then becomes facts and
reflections by the usual rules, or nothing when the model finds nothing worth keeping.
A session holding another agent is unknown to every tool, as over HTTP (serve.auth): the
server's agent reads nothing of it and never joins it. stdout carries the protocol: logs go to
stderr.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from client.memory_client import MemoryClient
from client.tools import run_tool_call
from memory.errors import MnemosError, NotFoundError
from memory.input_rules import WholeInt
from memory.settings import Settings
from serve.auth import session_refusal
from serve.mcp_notes import OFFSET_HELP, WITHOUT_USER, form_note, note_message, told
from serve.mcp_search import Id, Queries, TopK, bounds

INSTRUCTIONS = (
    "Long-term memory of agent {agent}. Call memory_context at the start of a conversation, "
    "search_facts before answering about the user or past sessions, remember for what the user "
    "explicitly asks to keep."
)


@asynccontextmanager
async def _told() -> AsyncIterator[None]:
    """Our errors (unknown session, invalid id, text that cannot be stored) reach the model as the
    tool's error text."""
    try:
        yield
    except (MnemosError, ValidationError) as e:
        raise ToolError(str(e)) from e


def build_server(memory: MemoryClient, agent_id: str) -> MCPServer:
    server: MCPServer = MCPServer(
        name="mnemos", instructions=INSTRUCTIONS.format(agent=agent_id), version="0.1.0"
    )
    mine = (agent_id,)

    async def own_session(session_id: str | None) -> None:
        """As over HTTP (serve.auth.session_refusal), the server's one agent for a key's agent
        set: a session holding another agent is unknown, to read from or to write into."""
        refusal = await session_refusal(memory.store, mine, session_id)
        if refusal is not None:
            raise ToolError(refusal)

    @server.tool(
        description="Search long-term memory for facts about the user or the agent's work: "
        f"{bounds(memory.settings.rag)}. The best facts come back one a line with their age."
    )
    async def search_facts(
        query: Queries,
        user_id: Id | None = None,
        session_id: Id | None = None,
        top_k: TopK | None = None,
    ) -> str:
        await own_session(session_id)
        async with _told():
            return await run_tool_call(
                memory,
                {"query": query, "top_k": top_k},
                agent_id=agent_id,
                session_id=session_id,
                user_id=user_id,
            )

    @server.tool()
    async def memory_context(session_id: str, user_id: str | None = None) -> str:
        """The memory context (XML) for a turn of this session: consolidated memories, recent
        reflections and facts. Empty when there is no memory yet."""
        await own_session(session_id)
        async with _told():
            return await memory.on_session_start(agent_id, session_id, user_id)

    @server.tool(
        description='Keep an explicit note (e.g. "remember that I am vegetarian", with the '
        "user's id): recorded in the session and formed into memory in the background. Returns "
        "the formation's workflow id, or says the formation is deferred while Temporal cannot be "
        f"reached (the note is kept and formed later). {WITHOUT_USER} {OFFSET_HELP}"
    )
    async def remember(
        note: str,
        session_id: str,
        user_id: str | None = None,
        utc_offset_minutes: WholeInt | None = None,  # not a JSON true,
    ) -> str:
        await own_session(session_id)
        async with _told():
            message = note_message(session_id, note, user_id, utc_offset_minutes)
            recorded = await memory.record_messages(agent_id, session_id, [message], may_join=mine)
            return told(recorded, await form_note(memory, agent_id, session_id, recorded))

    return server


async def serve_stdio(agent_id: str, settings: Settings | None = None) -> None:
    memory = await MemoryClient.connect(settings)
    try:
        if await memory.store.get_agent(agent_id) is None:  # fail at start, not at a tool call
            raise NotFoundError(f"agent {agent_id!r} is not registered")
        await build_server(memory, agent_id).run_stdio_async()
    finally:
        await memory.close()
