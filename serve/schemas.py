"""Request and response bodies of the API that the client's own models do not already cover."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool
from pydantic.config import JsonDict

from client.management import MAX_EDIT_CHARS
from client.results import FormationTrigger
from memory.input_rules import NOT_BLANK, StorableStr, WholeInt
from memory.models import Id, MessageIn, RecordOutcome
from memory.search_input import MAX_QUERY_CHARS

# Stated in the schema; the handlers check it with a clearer message than a pattern's.
_NOT_BLANK: JsonDict = {"pattern": NOT_BLANK}


class _In(BaseModel):
    """A request body: unknown fields are refused, types are not coerced (``0`` is no boolean,
    ``"3"`` no integer)."""

    model_config = ConfigDict(extra="forbid")


class AgentPatch(_In):
    """Fields to change; the others keep their value. A field is left out to keep it (``null``
    is no value: the schema does not admit it)."""

    # Defaults are not validated: None stands for "not sent" and never reaches the store.
    name: StorableStr = Field(None, min_length=1, max_length=200)  # type: ignore[assignment]
    persona: StorableStr = Field(None, max_length=4000)  # type: ignore[assignment]
    memory_instructions: StorableStr = Field(None, max_length=4000)  # type: ignore[assignment]
    user_memory_enabled: StrictBool = Field(None)  # type: ignore[assignment]
    agent_memory_enabled: StrictBool = Field(None)  # type: ignore[assignment]
    tier: WholeInt = Field(None, ge=0, le=10)  # type: ignore[assignment]


class RecordRequest(_In):
    messages: list[MessageIn] = Field(min_length=1, max_length=1000)
    trigger_formation: StrictBool = Field(
        True, description="Start a formation when the session's thresholds are met"
    )


class RecordResponse(BaseModel):
    recorded: RecordOutcome
    formation: FormationTrigger | None


class FormStarted(BaseModel):
    workflow_id: str


class SessionStartRequest(_In):
    user_id: Id | None = Field(None, description="The user of this turn (none: agent memory only)")


class ContextResponse(BaseModel):
    agent_id: str
    session_id: str
    user_id: str | None
    context: str = Field(description='The <MemoryContext> XML ("" when there is no memory yet)')


Query = Annotated[
    StorableStr, Field(min_length=1, max_length=MAX_QUERY_CHARS, json_schema_extra=_NOT_BLANK)
]


class SearchRequest(_In):
    queries: list[Query] = Field(
        min_length=1,
        description="1 to rag.max_queries queries; equal ones (ignoring case) are searched once",
    )
    session_id: Id | None = Field(None, description="The turn's session: its facts may be seen")
    user_id: Id | None = Field(None, description="The turn's user: their facts may be seen")
    top_k: WholeInt | None = Field(
        None, description="Facts per query: rag.top_k_min to rag.top_k_max"
    )
    debug: StrictBool = False


class TextEdit(_In):
    # The manager's bound (every door's edit passes it), stated in the document too.
    content: StorableStr = Field(
        min_length=1, max_length=MAX_EDIT_CHARS, json_schema_extra=_NOT_BLANK
    )


# The bound on the integer itself: on the optional field, pydantic would write a bare "ge".
_ExpectedVersion = Annotated[WholeInt, Field(ge=0)] | None


class FactEdit(TextEdit):
    reason: StorableStr = Field("manual edit", max_length=200)
    expected_version: _ExpectedVersion = Field(
        None, description="The version edited; a newer one is a 409 (None: current)"
    )


class ReflectionEdit(TextEdit):
    # A reflection has no version: the text the caller read stands for it.
    expected_content: StorableStr | None = Field(
        None,
        max_length=MAX_EDIT_CHARS,
        description="The text edited, as read; another one now is a 409 (None: current)",
    )


class ConsolidatedEdit(TextEdit):
    expected_version: _ExpectedVersion = Field(
        None, description="The version edited; a newer one is a 409 (None: current)"
    )


class Health(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = {}
