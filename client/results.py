"""What the client's calls answer, beside memory.models: a formation trigger, a forget, an end."""

from __future__ import annotations

from pydantic import BaseModel, Field

from memory.store.counts import ForgetCounts
from workflows.summary import SessionEndSummary


class FormationTrigger(BaseModel):
    started: bool
    workflow_id: str | None = None
    reason: str
    deferred: bool = Field(
        False,
        description="Due, but Temporal did not answer in time: the messages are stored and the "
        "next trigger or the cold-sessions job forms them",
    )


class ForgetResult(BaseModel):
    agents: list[ForgetCounts]
    workflow_executions_deleted: int | None  # None: no search attributes to find them by


# What ending a session formed and consolidated (the EndSession workflow's result).
SessionEnd = SessionEndSummary
