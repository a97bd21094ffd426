"""When a formation is due (002 "Formation Triggers"). One function serves the client and the workflow."""

from __future__ import annotations

from memory.models import SessionAgentState
from memory.settings import FormationSettings, SessionSettings


def formation_due(state: SessionAgentState, cfg: FormationSettings) -> bool:
    """Hot path: at least ``min_messages``, and the message or the weighted-token interval reached."""
    if state.pending_messages < cfg.min_messages:
        return False
    return (
        state.pending_messages >= cfg.message_interval
        or state.pending_weighted_tokens >= cfg.token_interval
    )


def cold_due(state: SessionAgentState, formation: FormationSettings) -> bool:
    """Idle session: enough messages, or enough weighted tokens, to be worth a formation."""
    return state.pending_messages >= formation.min_messages or (
        state.pending_messages >= 1 and state.pending_weighted_tokens >= formation.token_interval
    )


def cold_idle_minutes(cfg: SessionSettings) -> float:
    return cfg.cold_after_minutes
