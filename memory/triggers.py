"""When a formation is due (002 "Formation Triggers"). One function serves the client and the workflow."""

from __future__ import annotations

from memory.models import SessionAgentState
from memory.settings import FormationSettings


def formation_due(state: SessionAgentState, cfg: FormationSettings) -> bool:
    """Hot path: at least ``min_messages``, and the message or the weighted-token interval reached."""
    if state.pending_messages < cfg.min_messages:
        return False
    return (
        state.pending_messages >= cfg.message_interval
        or state.pending_weighted_tokens >= cfg.token_interval
    )
