"""Step 1: which messages one formation reads, and which scopes it may write."""

from __future__ import annotations

from memory import ids
from memory.errors import NotFoundError
from memory.models import AgentConfig, FactScope, SessionInfo
from memory.pipeline.types import FormationRequest, Window
from memory.settings import Scope, Settings
from memory.store.base import MemoryStore
from memory.triggers import formation_due


def scopes_for(
    agent: AgentConfig, session: SessionInfo
) -> tuple[tuple[FactScope, ...], tuple[Scope, ...]]:
    """Toggles and the group-chat rule (002): session memory always; user memory only with one user."""
    user_ok = agent.user_memory_enabled and len(session.user_ids) == 1
    facts: list[FactScope] = []
    reflections: list[Scope] = []
    if agent.agent_memory_enabled:
        facts.append("agent")
        reflections.append("agent")
    if user_ok:
        facts.append("user")
        reflections.append("user")
    reflections.append("session")
    return tuple(facts), tuple(reflections)


async def load_window(
    store: MemoryStore, settings: Settings, req: FormationRequest
) -> Window | None:
    """The next unformed range of (session, agent), or None when nothing is due."""
    state = await store.get_session_agent_state(req.session_id, req.agent_id)
    if state is None or state.last_seq <= state.cursor_seq:
        return None
    if not req.force and not formation_due(state, settings.formation):
        return None
    agent = await store.get_agent(req.agent_id)
    if agent is None:
        raise NotFoundError(f"agent {req.agent_id!r} is not registered")
    session = await store.get_session(req.session_id)
    if session is None:
        raise NotFoundError(f"session {req.session_id!r} does not exist")
    fact_scopes, reflection_scopes = scopes_for(agent, session)
    upto = min(state.last_seq, state.cursor_seq + settings.formation.max_messages_per_run)
    return Window(
        formation_id=ids.formation_id(req.session_id, req.agent_id, state.cursor_seq, upto),
        session_id=req.session_id,
        agent_id=req.agent_id,
        user_id=session.user_ids[0] if len(session.user_ids) == 1 else None,
        after_seq=state.cursor_seq,
        upto_seq=upto,
        message_count=upto - state.cursor_seq,
        fact_scopes=fact_scopes,
        reflection_scopes=reflection_scopes,
        more_pending=upto < state.last_seq,
        # A user forgotten while this formation runs gets a new epoch: the commit then writes
        # nothing for them (rules.erasure).
        user_epochs=await store.erasure_epochs(req.agent_id, session.user_ids),
    )
