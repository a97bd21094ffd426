"""MCP over the streamable HTTP transport at ``/mcp`` of ``mnemos serve``: memory tools for a remote
agent or an evaluation harness, behind the same API keys as the HTTP API.

Stateless (each POST is a whole exchange, so any replica or worker process can answer) and with
plain JSON answers (``json_response``); a client that accepts SSE gets JSON all the same. The key
comes as ``Authorization: Bearer mk_…`` or ``X-API-Key``: no valid key is a 401 problem before
the MCP layer; each tool call names its agent, which the key must cover (writes need a write
key, forgetting a user a key that may erase), so a key's agent set bounds what the tools see.
Each tool call draws on the key's budget of its kind (serve/rate_limit.py), the same buckets as
the HTTP API's: over it, the call is a tool error saying when to retry, and nothing is done.

Tools: ``remember`` (messages, or one explicit note, recorded and formed by the same workflows
as over HTTP), ``search``, ``context``, ``forget`` (a fact by id, or a user's whole memory).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from client.memory_client import MemoryClient
from client.tools import run_tool_call
from memory.api_keys import ApiKey
from memory.errors import MnemosError
from memory.input_rules import WholeInt
from memory.models import FactFilter, MessageIn
from serve.auth import session_refusal, token_of
from serve.errors import problem
from serve.keys import ApiKeyStore
from serve.mcp_notes import OFFSET_HELP, WITHOUT_USER, form_note, note_message
from serve.mcp_search import Id, Queries, TopK, bounds
from serve.rate_limit import Kind, RateLimiter

PATH = "/mcp"
_KEY = "mnemos_api_key"
INSTRUCTIONS = (
    "Long-term memory of AI agents. Call context at the start of a conversation, search before "
    "answering about the user or past sessions, remember for what the user asks to keep."
)


class KeyedMCP:
    """The MCP transport behind our API keys: 401 without a valid one; the key rides along in
    the request's state, where the tools read it."""

    def __init__(self, inner: ASGIApp, keys: ApiKeyStore) -> None:
        self.inner = inner
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        token = token_of(request)
        key = await self.keys.verify(token) if token else None
        if key is None:
            detail = "a valid API key is required (Authorization: Bearer mk_…)"
            answer = problem(request, 401, detail, headers={"WWW-Authenticate": "Bearer"})
            await answer(scope, receive, send)
            return
        scope.setdefault("state", {})[_KEY] = key
        await self.inner(scope, receive, send)


async def _own_session(memory: MemoryClient, key: ApiKey, session_id: str | None) -> None:
    """As the HTTP routes (serve.auth.session_refusal): another agent's session is unknown."""
    if (refusal := await session_refusal(memory.store, key.agent_ids, session_id)) is not None:
        raise ToolError(refusal)


def _key_of(ctx: Context[Any], limiter: RateLimiter, agent_id: str, kind: Kind) -> ApiKey:
    """The call's key, charged one request of ``kind``, and checked against the agent (a write
    or a heavy call needs a write key)."""
    write = kind != "read"
    request = ctx.request_context.request
    key = getattr(request.state, _KEY, None) if isinstance(request, Request) else None
    if not isinstance(key, ApiKey):
        raise ToolError("no API key in this request")
    refusal = limiter.take(key.key_id, kind)
    if refusal is not None:
        raise ToolError(f"rate limited: {refusal.detail}")
    if agent_id not in key.agent_ids:
        raise ToolError(f"this key is not for agent {agent_id!r}")
    if write and key.read_only:
        raise ToolError("this key is read-only")
    return key


@asynccontextmanager
async def _told() -> AsyncIterator[None]:
    """Our errors and invalid input reach the model as the tool's error text."""
    try:
        yield
    except (MnemosError, ValidationError) as e:
        raise ToolError(str(e)) from e


def build_http_server(memory: MemoryClient, limiter: RateLimiter) -> MCPServer:
    server: MCPServer = MCPServer(name="mnemos", instructions=INSTRUCTIONS, version="0.1.0")

    @server.tool(
        description="Record new messages of a session (formed into memory when its thresholds "
        "are met), or one explicit note (formed at once; while Temporal cannot be reached the "
        "formation is deferred, formation_deferred true, and the messages are kept and formed "
        "later). Give messages or a note, not both. "
        "user_id: the user the conversation is with, the speaker of each user message that "
        f"names none (a message that names its user keeps it) and of the note. {WITHOUT_USER} "
        f"{OFFSET_HELP} (for the note; messages carry their own created_at)"
    )
    async def remember(
        ctx: Context[Any],
        agent_id: str,
        session_id: str,
        messages: list[MessageIn] | None = None,
        note: str | None = None,
        user_id: str | None = None,
        utc_offset_minutes: WholeInt | None = None,  # not a JSON true,
    ) -> dict[str, Any]:
        key = _key_of(ctx, limiter, agent_id, "write")
        if (messages is None) == (note is None) or messages == []:
            raise ToolError("give either messages (at least one) or a note")
        await _own_session(memory, key, session_id)
        async with _told():
            if note is not None:
                messages = [note_message(session_id, note, user_id, utc_offset_minutes)]
            elif user_id is not None and messages:
                # A user message without a user_id is a guest's: beside alice it would make the
                # session a group chat, turning user memory off there for every agent.
                messages = [
                    MessageIn.model_validate({**m.model_dump(), "user_id": user_id})
                    if m.role == "user" and m.user_id is None
                    else m
                    for m in messages
                ]
            recorded = await memory.record_messages(
                agent_id, session_id, messages or [], may_join=key.agent_ids
            )
            if note is not None:
                trigger = await form_note(memory, agent_id, session_id, recorded)
            else:
                trigger = await memory.maybe_form_memories(agent_id, session_id)
        return {
            "inserted": recorded.inserted,
            "duplicates": recorded.duplicates,
            "formation_started": trigger.started,
            "formation_deferred": trigger.deferred,
            "workflow_id": trigger.workflow_id,
        }

    @server.tool(
        description="Search the agent's long-term memory: "
        f"{bounds(memory.settings.rag)}. The best facts come back one a line with their age "
        "(the same text the agent's own search_facts tool gets)."
    )
    async def search(
        ctx: Context[Any],
        agent_id: str,
        query: Queries,
        user_id: Id | None = None,
        session_id: Id | None = None,
        top_k: TopK | None = None,
    ) -> str:
        key = _key_of(ctx, limiter, agent_id, "read")
        await _own_session(memory, key, session_id)
        async with _told():
            return await run_tool_call(
                memory,
                {"query": query, "top_k": top_k},
                agent_id=agent_id,
                session_id=session_id,
                user_id=user_id,
            )

    @server.tool()
    async def context(
        ctx: Context[Any], agent_id: str, session_id: str, user_id: str | None = None
    ) -> str:
        """The <MemoryContext> XML for a turn of this session ("" when there is no memory), the
        first one too: the session need not have recorded messages (as POST …/start)."""
        key = _key_of(ctx, limiter, agent_id, "read")
        await _own_session(memory, key, session_id)
        async with _told():
            return await memory.on_session_start(agent_id, session_id, user_id)

    @server.tool()
    async def forget(
        ctx: Context[Any], agent_id: str, fact_id: str | None = None, user_id: str | None = None
    ) -> dict[str, Any]:
        """Forget one fact (kept as deleted, never shown again), or with user_id alone a user's
        whole memory with this agent (hard-deleted; only a key that may erase)."""
        erase = fact_id is None and user_id is not None
        key = _key_of(ctx, limiter, agent_id, "heavy" if erase else "write")
        async with _told():
            if fact_id is not None:
                found = await memory.store.get_facts([fact_id])
                owner = found[0].user_id if found and found[0].agent_id == agent_id else None
                within = FactFilter(agent_id=agent_id, user_id=owner)
                fact = await memory.manager.delete_fact(fact_id, within=within)
                return {"fact_id": fact.fact_id, "deleted": fact.invalidated_at is not None}
            if user_id is None:
                raise ToolError("give a fact_id, or a user_id to forget that user")
            if not key.can_erase:
                raise ToolError("this key may not erase users (mnemos keys create --erase)")
            result = await memory.forget_user(agent_id, user_id)
            return result.model_dump(mode="json")

    return server


def mount(server: MCPServer, keys: ApiKeyStore) -> tuple[ASGIApp, Any]:
    """The ASGI app to route at ``PATH`` and the session manager whose ``run()`` the app's
    lifespan must hold open."""
    server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        # Requests carry API keys, so DNS rebinding cannot borrow a browser's access.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager
    return KeyedMCP(StreamableHTTPASGIApp(manager), keys), manager
