"""top_k over MCP is a JSON number, as in the HTTP search (422 for ``true``) and as ``remember``'s
utc_offset_minutes: a JSON ``true`` or ``"3"`` is invalid input, a tool error (isError), not a
search for 1 or 3 facts."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from temporalio.testing import WorkflowEnvironment

from serve.mcp_server import build_server
from tests.harness import Harness
from tests.serve.conftest import Served
from tests.serve.test_mcp_http import live, mcp_session, text

NOT_A_NUMBER = "not a string or a boolean"


async def test_a_boolean_or_text_top_k_is_a_tool_error_over_stdio(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    try:
        server = build_server(h.memory, "eve")
        for top_k in (True, "3"):
            with pytest.raises(ToolError, match=NOT_A_NUMBER):
                await server.call_tool("search_facts", {"query": ["tea"], "top_k": top_k})
        found = await server.call_tool("search_facts", {"query": ["tea"], "top_k": 3.0})
        assert found  # a whole number written 3.0 is the number 3, as over HTTP
    finally:
        await h.store.close()


async def test_a_boolean_top_k_is_a_tool_error_over_http_mcp(served: Served) -> None:
    async with live(served) as base, mcp_session(base, served.eve) as mcp:
        refused = await mcp.call_tool(
            "search", {"agent_id": "eve", "query": ["tea"], "top_k": True}
        )
        assert refused.is_error and NOT_A_NUMBER in text(refused), text(refused)
    async with served.client(served.eve) as c:
        r = await c.post("/v1/agents/eve/search", json={"queries": ["tea"], "top_k": True})
    assert r.status_code == 422  # the HTTP search refuses it alike
