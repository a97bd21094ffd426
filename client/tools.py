"""The ``search_facts`` tool (002 "RAG Tool"): its definition for OpenAI and Gemini function calling,
and the handler that executes a model's call and returns the text the model reads back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from memory.context import one_line, when_said
from memory.errors import InvalidInputError
from memory.search_results import SearchResult
from memory.settings import RagSettings

NAME = "search_facts"
DESCRIPTION = (
    "Search long-term memory for facts about users, projects and past conversations. Use it when "
    "the answer to a specific question (names, emails, URLs, dates, numbers, specifications) is not "
    "in the current memory context."
)


def description(rag: RagSettings | None = None) -> str:
    """What the model is told of the tool: the number of queries it may send is the setting's, as
    in the schema's maxItems (a fixed number would have it send calls refused, or too few)."""
    most = (rag or RagSettings()).max_queries
    return DESCRIPTION + (
        " One query per call." if most == 1 else f" Up to {most} queries run in parallel."
    )


def parameters_schema(rag: RagSettings | None = None) -> dict[str, Any]:
    """JSON schema of the arguments (the subset that OpenAI and Gemini both accept)."""
    rag = rag or RagSettings()
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "maxItems": rag.max_queries,
                "description": "Search queries, each a few keywords or a short question",
            },
            "top_k": {
                "type": "integer",
                "minimum": rag.top_k_min,
                "maximum": rag.top_k_max,
                "description": f"Facts to return per query (default {rag.top_k_default})",
            },
        },
        "required": ["query"],
    }


def openai_tool(rag: RagSettings | None = None) -> dict[str, Any]:
    """For ``chat.completions.create(tools=[...])``."""
    return {
        "type": "function",
        "function": {
            "name": NAME,
            "description": description(rag),
            "parameters": parameters_schema(rag),
        },
    }


def openai_responses_tool(rag: RagSettings | None = None) -> dict[str, Any]:
    """For ``responses.create(tools=[...])``."""
    return {
        "type": "function",
        "name": NAME,
        "description": description(rag),
        "parameters": parameters_schema(rag),
    }


def gemini_tool(rag: RagSettings | None = None) -> dict[str, Any]:
    """For ``GenerateContentConfig(tools=[...])`` of google-genai (a Tool as a dict)."""
    return {
        "function_declarations": [
            {
                "name": NAME,
                "description": description(rag),
                "parameters_json_schema": parameters_schema(rag),
            }
        ]
    }


class SearchFactsCall(BaseModel):
    """The arguments a model sent. A lone string query is accepted: models do send that; so is
    ``queries``, the HTTP search's name, for a backend that builds the arguments itself."""

    model_config = ConfigDict(extra="ignore")

    query: list[str] = Field(min_length=1, validation_alias=AliasChoices("query", "queries"))
    top_k: int | None = None
    debug: bool = False

    @field_validator("query", mode="before")
    @classmethod
    def _listify(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value


def parse_call(arguments: str | dict[str, Any]) -> SearchFactsCall:
    try:
        raw = json.loads(arguments) if isinstance(arguments, str) else arguments
        return SearchFactsCall.model_validate(raw)
    except (ValueError, ValidationError) as e:
        raise InvalidInputError(f"search_facts arguments are invalid: {e}") from e


class FactSearch(Protocol):
    """What the handler needs: ``MemoryClient.search_facts`` (or a backend's own wrapper of it)."""

    async def search_facts(
        self,
        agent_id: str,
        queries: str | Sequence[str],
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        top_k: int | None = None,
        debug: bool = False,
    ) -> SearchResult: ...


def render(result: SearchResult) -> str:
    """What the model reads: one fact per line with when it was said, best first (the lines of the
    memory context's <Facts>: "- [user] Alice moved to Lisbon (said 8 May 2023, 3d ago)"). A text
    holding newlines (an import, an older store) stays on its line, as in the context: it cannot
    show a forged "- [agent] ..." item."""
    if not result.hits:
        return "No matching facts in long-term memory."
    return "\n".join(
        f"- [{h.scope}] {one_line(h.content)} "
        f"({when_said(h.said_at, h.age, h.said_utc_offset_minutes)})"
        for h in result.hits
    )


async def handle_tool_call(
    memory: FactSearch,
    arguments: str | dict[str, Any],
    *,
    agent_id: str,
    session_id: str | None,
    user_id: str | None,
) -> str:
    """Execute a ``search_facts`` call for this turn, the first one of a session too (it need not
    have recorded messages: it searches what its session start shows). Invalid input comes back
    as text the model can act on, not as an exception that would end the agent's turn; what the
    model cannot mend raises as from ``search_facts`` (an agent that is not registered, a
    provider that fails)."""
    try:
        return await run_tool_call(
            memory, arguments, agent_id=agent_id, session_id=session_id, user_id=user_id
        )
    except InvalidInputError as e:
        return f"search_facts error: {e}"


async def run_tool_call(
    memory: FactSearch,
    arguments: str | dict[str, Any],
    *,
    agent_id: str,
    session_id: str | None,
    user_id: str | None,
) -> str:
    """``handle_tool_call`` with invalid input raised (InvalidInputError), for a caller that
    reports a refusal in its own way: the MCP tools answer it as a tool error (``isError``),
    which a client tells apart from an answer of memory."""
    call = parse_call(arguments)
    result = await memory.search_facts(
        agent_id,
        call.query,
        session_id=session_id,
        user_id=user_id,
        top_k=call.top_k,
        debug=call.debug,
    )
    text = render(result)
    if call.debug and result.debug is not None:
        text += "\n\n" + result.debug.model_dump_json(indent=1)
    return text
