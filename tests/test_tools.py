"""The search_facts tool as an agent backend wires it: definitions the SDKs accept, and a handler that
answers a model's call with text (errors included) from the facts this turn may see."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from google.genai import types as genai_types
from temporalio.testing import WorkflowEnvironment

from client.tools import (
    gemini_tool,
    handle_tool_call,
    openai_responses_tool,
    openai_tool,
    parse_call,
    render,
)
from memory.errors import InvalidInputError
from memory.search_results import SearchHit, SearchResult
from memory.settings import RagSettings
from tests.harness import T0, Harness, conversation, facts

NO_THRESHOLDS = RagSettings(
    semantic_score_threshold=0, text_score_threshold=0, rrf_score_threshold=0
)


def hit(fact_id: str, content: str, age: str, said_at: datetime | None) -> SearchHit:
    stored = datetime(2025, 3, 1, tzinfo=UTC)
    return SearchHit(
        fact_id=fact_id, content=content, scope="user", age=age, score=1.0, cosine=None,
        bm25=None, updated_at=stored, said_at=said_at,
    )  # fmt: skip


def test_the_model_reads_when_each_fact_was_said() -> None:
    result = SearchResult(
        hits=[
            hit("f1", "Alice moved to Lisbon", "3d ago", datetime(2023, 5, 8, 23, 30, tzinfo=UTC)),
            hit("f2", "Alice likes tea", "5d ago", None),  # stored before facts recorded it
        ]
    )
    assert render(result) == (
        "- [user] Alice moved to Lisbon (said 8 May 2023, 3d ago)\n"
        "- [user] Alice likes tea (5d ago)"
    )
    assert render(SearchResult(hits=[])) == "No matching facts in long-term memory."


def test_definitions_name_the_tool_and_bound_the_arguments() -> None:
    fn = openai_tool()["function"]
    assert fn["name"] == "search_facts"
    assert fn["parameters"]["properties"]["query"]["maxItems"] == 3
    assert openai_responses_tool()["parameters"] == fn["parameters"]
    tool = genai_types.Tool.model_validate(gemini_tool())  # the real SDK type accepts it
    assert tool.function_declarations and tool.function_declarations[0].name == "search_facts"


def test_a_lone_string_query_is_accepted_and_garbage_is_not() -> None:
    assert parse_call('{"query": "alice email"}').query == ["alice email"]
    assert parse_call({"query": ["a", "b"], "top_k": 5}).top_k == 5
    # The HTTP search's name, from a backend that builds the arguments itself.
    assert parse_call({"queries": ["alice email"]}).query == ["alice email"]
    with pytest.raises(InvalidInputError):
        parse_call("{not json")
    with pytest.raises(InvalidInputError):
        parse_call({"query": []})


async def test_handler_returns_the_users_facts_and_not_another_users(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, rag=NO_THRESHOLDS)
    await h.record("s1", conversation(4, user="alice"))
    await h.record("s2", conversation(4, user="bob", prefix="b"))
    h.llm.script("extract_facts", facts(("Alice's email is alice@example.com", "user")))
    h.llm.script("extract_facts", facts(("Bob's email is bob@example.com", "user")))
    async with h.worker():
        await h.form("s1")
        await h.form("s2")
    text = await handle_tool_call(
        h.memory, '{"query": ["email address"]}', agent_id="eve", session_id="s1", user_id="alice"
    )
    assert "alice@example.com" in text and "bob@example.com" not in text
    assert text.startswith("- [user] ")
    # said_at: the time of its latest source message, whose day the model reads
    assert f"alice@example.com (said {T0.day} {T0:%B %Y}, " in text
    bad = await handle_tool_call(
        h.memory,
        '{"query": ["a", "b", "c", "d"]}',
        agent_id="eve",
        session_id="s1",
        user_id="alice",
    )
    assert bad.startswith("search_facts error:")
