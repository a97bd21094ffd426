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


def unknown_session(session_id: str) -> str:
    """What a caller is told of a session it may not see, whether or not it exists."""
    return f"session {session_id!r} has no recorded messages"


async def require_session(
    store: MemoryStore, session_id: str, agent_id: str | None = None
) -> SessionInfo:
    """The session (it exists once a message was recorded in it), or NotFoundError; with
    ``agent_id`` that agent's view of it (empty, no participants, for an agent that never
    recorded into it: it has heard nothing there yet)."""
    if agent_id is not None and (mine := await store.get_session(session_id, agent_id)):
        return mine
    session = await store.get_session(session_id)
    if session is None:
        raise NotFoundError(unknown_session(session_id))
    if agent_id is not None:
        view = {"user_ids": (), "ended_at": None, "session_user_ids": session.user_ids}
        return session.model_copy(update=view)
    return session
