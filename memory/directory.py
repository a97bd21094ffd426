"""Who an agent has talked with, as the store lists it (the memory page's users and sessions)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from memory.models import Id, UtcDatetime


class AgentUser(BaseModel):
    """A user of the agent's sessions: how many sessions they shared, and when last active."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_id: Id
    sessions: int
    last_active_at: UtcDatetime  # the latest last message (or creation) of those sessions
