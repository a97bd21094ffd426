"""The existence checks of what a caller names: one wording, one place."""

from __future__ import annotations

from memory.errors import NotFoundError
from memory.models import AgentConfig, SessionInfo
from memory.store.base import MemoryStore


async def require_agent(store: MemoryStore, agent_id: str) -> AgentConfig:
    """The registered agent, or NotFoundError."""
    agent = await store.get_agent(agent_id)
    if agent is None:
        raise NotFoundError(f"agent {agent_id!r} is not registered: call register_agent first")
    return agent


async def require_session(store: MemoryStore, session_id: str) -> SessionInfo:
    """The session (it exists once a message was recorded in it), or NotFoundError."""
    session = await store.get_session(session_id)
    if session is None:
        raise NotFoundError(f"session {session_id!r} does not exist")
    return session
