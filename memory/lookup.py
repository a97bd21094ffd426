"""The existence checks of what a caller names: one wording, one place (the pipeline uses them; the
client's and the CLI's checks of the same things are meant to call them too)."""

from __future__ import annotations

from memory.errors import NotFoundError
from memory.models import AgentConfig, SessionInfo
from memory.store.base import MemoryStore


async def require_agent(store: MemoryStore, agent_id: str) -> AgentConfig:
    """The registered agent, or NotFoundError."""
    agent = await store.get_agent(agent_id)
    if agent is None:
        raise NotFoundError(f"agent {agent_id!r} is not registered")
    return agent


async def require_session(store: MemoryStore, session_id: str) -> SessionInfo:
    """The session (it exists once a message was recorded in it), or NotFoundError."""
    session = await store.get_session(session_id)
    if session is None:
        raise NotFoundError(f"session {session_id!r} has no recorded messages")
    return session
