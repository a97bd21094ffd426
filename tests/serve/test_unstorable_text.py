"""A string that cannot be stored or tokenized (an unpaired surrogate, valid JSON as ``"\\ud800"``)
is a 422 naming the field, never a 500: sent to every string field of every operation's body,
and to every string parameter. The fields come from the OpenAPI document, so a new route or a
new field is covered without touching this test."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from memory.errors import InvalidInputError
from memory.models import AgentConfig, ScopeKey
from serve.mcp_server import build_server
from tests.serve.conftest import Served

BAD = "\ud800"
SAMPLE_PARAMS = {"agent_id": "eve", "session_id": "s1", "scope": "agent", "user_id": "alice"}
Path = tuple[str | int, ...]


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    for key in ("anyOf", "oneOf"):  # an optional field: its non-null form
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"]
            return _resolve(spec, options[0])
    return schema


def sample(spec: dict[str, Any], schema: dict[str, Any]) -> Any:
    """A value of ``schema`` with every property present (optional ones too)."""
    schema = _resolve(spec, schema)
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {name: sample(spec, sub) for name, sub in props.items()}
    if kind == "array":
        return [sample(spec, schema.get("items", {}))]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "boolean":
        return True
    if schema.get("format") == "date-time":
        return "2026-11-01T09:00:00Z"
    return "x1"


def string_leaves(value: Any, at: Path = ()) -> list[Path]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in string_leaves(v, (*at, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in string_leaves(v, (*at, i))]
    return [at] if isinstance(value, str) else []


def poisoned(value: Any, at: Path) -> Any:
    if not at:
        return BAD
    copy = json.loads(json.dumps(value))
    target = copy
    for step in at[:-1]:
        target = target[step]
    target[at[-1]] = BAD
    return copy


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if path.startswith("/v1/")
    ]


def url_of(path: str) -> str:
    for name, value in SAMPLE_PARAMS.items():
        path = path.replace("{" + name + "}", value)
    return path.replace("{fact_id}", "f-1").replace("{reflection_id}", "r-1")


async def test_every_string_field_of_every_body_refuses_an_unpaired_surrogate(
    served: Served,
) -> None:
    spec = served.app.openapi()
    checked: list[str] = []
    async with served.client(served.eve) as c:
        for method, path, op in operations(spec):
            body_schema = op.get("requestBody", {}).get("content", {}).get("application/json")
            if body_schema is None:
                continue
            base = sample(spec, body_schema["schema"])
            for leaf in string_leaves(base):
                # ensure_ascii writes the surrogate as the JSON escape a client would send
                raw = json.dumps(poisoned(base, leaf), ensure_ascii=True)
                r = await c.request(
                    method, url_of(path), content=raw, headers={"content-type": "application/json"}
                )
                where = f"{method} {path} {list(leaf)}"
                assert r.status_code == 422, (where, r.status_code, r.text)
                assert r.headers["content-type"] == "application/problem+json", where
                locs = [e["loc"][1:] for e in r.json().get("errors", [])]
                assert list(leaf) in locs, (where, locs)
                checked.append(where)
    # the operations that take text: agents, messages, search, edits of facts, reflections, blobs
    assert len({w.split(" [")[0] for w in checked}) >= 7, checked


async def test_every_string_parameter_refuses_undecodable_text(served: Served) -> None:
    """A URL cannot carry a surrogate as UTF-8; its percent-encoded bytes (%ED%A0%80) are refused
    as a 4xx wherever a string parameter goes."""
    spec = served.app.openapi()
    async with served.client(served.eve) as c:
        for method, path, op in operations(spec):
            for param in op.get("parameters", []):
                if _resolve(spec, param["schema"]).get("type") != "string":
                    continue
                url = url_of(path)
                if param["in"] == "path":
                    url = url_of(path.replace("{" + param["name"] + "}", "%ED%A0%80"))
                elif param["in"] == "query":
                    url = f"{url}?{param['name']}=%ED%A0%80"
                else:
                    continue
                r = await c.request(method, url, json={})
                assert 400 <= r.status_code < 500, (method, url, r.status_code, r.text)


async def test_the_python_client_and_the_mcp_tools_refuse_it_too(served: Served) -> None:
    memory = served.memory
    message = {
        "message_id": "m1",
        "role": "user",
        "content": BAD,
        "created_at": "2026-11-01T09:00:00Z",
    }
    with pytest.raises(InvalidInputError, match=r"surrogate|unicode"):
        await memory.record_messages("eve", "s1", [message])
    with pytest.raises(InvalidInputError, match=r"surrogate|unicode"):
        await memory.record_messages("eve", "s1", [{**message, "content": "hi", "name": BAD}])
    with pytest.raises(ValidationError, match=r"surrogate|unicode"):
        AgentConfig(agent_id="eve", name="Eve", persona=BAD)
    with pytest.raises(InvalidInputError, match=r"surrogate|unicode"):
        await memory.search_facts("eve", ["tea", BAD])
    with pytest.raises(InvalidInputError, match=r"surrogate|unicode"):
        await memory.manager.edit_consolidated(ScopeKey.agent("eve"), f"Eve is {BAD}")
    with pytest.raises(InvalidInputError, match="NUL"):
        await memory.manager.edit_consolidated(ScopeKey.agent("eve"), "Eve\x00")
    server = build_server(memory, "eve")
    with pytest.raises(ToolError, match="surrogate"):
        await server.call_tool("remember", {"note": BAD, "session_id": "s1"})
    # a tool error (isError) as for any bad call, not a result that reads as memory's answer
    with pytest.raises(ToolError, match="surrogate"):
        await server.call_tool("search_facts", {"query": [BAD]})
    assert await served.h.store.get_session("s1") is None  # nothing was recorded
