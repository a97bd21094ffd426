"""Request and response bodies of the API that the client's own models do not already cover."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from client.memory_client import FormationTrigger
from memory.models import Id, MessageIn, RecordOutcome
from memory.settings import Scope


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AgentPatch(_In):
    """Fields to change; the others keep their value."""

    name: str | None = Field(None, min_length=1, max_length=200)
    persona: str | None = Field(None, max_length=4000)
    memory_instructions: str | None = Field(None, max_length=4000)
    user_memory_enabled: bool | None = None
    agent_memory_enabled: bool | None = None
    tier: int | None = Field(None, ge=0, le=10)


class RecordRequest(_In):
    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    trigger_formation: bool = Field(
        True, description="Start a formation when the session's thresholds are met"
    )


class RecordResponse(BaseModel):
    recorded: RecordOutcome
    formation: FormationTrigger | None


class FormStarted(BaseModel):
    workflow_id: str


class SessionStartRequest(_In):
    user_id: Id | None = None


class ContextResponse(BaseModel):
    agent_id: str
    session_id: str
    user_id: str | None
    context: str = Field(description='The <MemoryContext> XML ("" when there is no memory yet)')


class SearchRequest(_In):
    queries: list[str] = Field(min_length=1, description="1 to rag.max_queries queries")
    session_id: Id | None = None
    user_id: Id | None = None
    top_k: int | None = None
    debug: bool = False


class TextEdit(_In):
    content: str = Field(min_length=1, max_length=20_000)


class FactEdit(TextEdit):
    reason: str = Field("manual edit", max_length=200)


class ConsolidatedEdit(TextEdit):
    expected_version: int | None = Field(
        None, ge=0, description="The version edited; a newer one is a 409 (None: current)"
    )


class ScopeQuery(_In):
    scope: Scope
    user_id: Id | None = None
    session_id: Id | None = None


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = {}
