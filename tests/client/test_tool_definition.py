"""The search_facts tool handed to the agent's model tells it how many queries one call may send:
the configured ``rag.max_queries``, as its schema's maxItems says, not a fixed number (told 3 with
a limit of 1, the model's calls of 2 or 3 queries are refused; with 5, it never sends the rest)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from client.tools import gemini_tool, openai_responses_tool, openai_tool
from memory.settings import RagSettings

Build = Callable[[RagSettings | None], dict[str, Any]]


def _description_and_most(tool: dict[str, Any]) -> tuple[str, int]:
    """The description and maxItems of the query, wherever the API puts the function."""
    fn = tool.get("function") or (tool.get("function_declarations") or [tool])[0]
    params = fn.get("parameters") or fn["parameters_json_schema"]
    return fn["description"], params["properties"]["query"]["maxItems"]


@pytest.mark.parametrize("build", [openai_tool, openai_responses_tool, gemini_tool])
def test_the_tool_states_the_configured_number_of_queries(build: Build) -> None:
    assert _description_and_most(build(None)) == (
        _description_and_most(build(RagSettings(max_queries=3)))
    )
    text, most = _description_and_most(build(RagSettings(max_queries=5)))
    assert (most, "Up to 5 queries run in parallel." in text, "3" in text) == (5, True, False)
    text, most = _description_and_most(build(RagSettings(max_queries=1)))
    assert (most, "One query per call." in text, "queries" in text) == (1, True, False)
