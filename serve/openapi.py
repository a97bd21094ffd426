"""The OpenAPI document states what the server does: every error status an operation can answer,
in the one problem shape, and the limits that come from settings.

Statuses that follow from an operation's shape are added here, so that a new route cannot forget
them: 401, 403, 429 (the key's budget for the operation's kind, with ``Retry-After``) and 503
(the store, which holds the keys, out of reach) for a keyed operation, 404 under an agent, 413
and 422 for a body, 422 for parameters, 405 everywhere (with ``Allow``). Statuses that follow from what a handler does (409
on a conflict, 502 when a provider fails) are declared on the route with ``problems(...)``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from memory.settings import Settings
from serve.errors import PROBLEM_JSON, FieldError, Problem
from serve.limits import MAX_BODY_BYTES
from serve.rate_limit import Budget, Kind, RateLimiter, kind_of

_REF = "#/components/schemas/"
_WHY = {
    400: "The body cannot be read as JSON text",
    401: "No valid API key (`WWW-Authenticate: Bearer`)",
    403: "The key is not for this agent, or is read-only on a write",
    404: "The agent (or the named resource) does not exist",
    405: "The path does not take this method; `Allow` lists those it takes",
    409: "Someone changed it first, or it can no longer change",
    413: f"The body exceeds {MAX_BODY_BYTES // (1024 * 1024)} MiB",
    422: "The input is invalid: `errors` lists each invalid field",
    502: "An LLM or embedding provider failed",
    503: "The memory store cannot be reached: retry later",
}
_ALLOW = {"Allow": {"description": "The methods this path takes", "schema": {"type": "string"}}}
_RATE_HEADERS = {
    "Retry-After": {
        "description": "Seconds until the key may retry (a whole number, at least 1)",
        "required": True,
        "schema": {"type": "integer", "minimum": 1},
    },
    "RateLimit-Policy": {
        "description": 'The budget (IETF draft): `"<kind>";q=<burst>;w=<seconds to refill>`',
        "schema": {"type": "string"},
    },
    "RateLimit": {
        "description": 'What is left (IETF draft): `"<kind>";r=0;t=<seconds>`',
        "schema": {"type": "string"},
    },
}


def _rate_limited(kind: Kind, budget: Budget) -> dict[str, Any]:
    response = problem_response(
        429,
        f"This key is over its {kind} budget ({budget.per_second:g}/s, bursts of "
        f"{budget.burst}, per server process); nothing was done. `Retry-After` says when to "
        "retry",
    )
    response["headers"] = _RATE_HEADERS
    return response


def problem_response(code: int, why: str | None = None) -> dict[str, Any]:
    response: dict[str, Any] = {
        "description": why or _WHY.get(code, "Error"),
        "content": {PROBLEM_JSON: {"schema": {"$ref": f"{_REF}Problem"}}},
    }
    if code == 405:
        response["headers"] = _ALLOW
    return response


def problems(*codes: int, **why: str) -> dict[int | str, dict[str, Any]]:
    """Route ``responses=`` for the statuses a handler itself raises; ``why`` as ``s409="…"``."""
    return {code: problem_response(code, why.get(f"s{code}")) for code in codes}


def _document(
    operation: dict[str, Any], path: str, method: str, budgets: dict[Kind, Budget] | None
) -> None:
    responses: dict[str, Any] = operation.setdefault("responses", {})
    codes: list[int] = [405]
    if operation.get("security"):
        codes += [401, 403, 503]
        if budgets is not None:
            kind = kind_of(method, operation.get("operationId", ""))
            responses["429"] = _rate_limited(kind, budgets[kind])
    if "{agent_id}" in path:
        codes.append(404)
    if "requestBody" in operation:
        codes += [400, 413, 422]
    if operation.get("parameters"):
        codes.append(422)
    for code in codes:
        existing = responses.get(str(code))
        if existing is None or "HTTPValidationError" in str(existing):
            responses[str(code)] = problem_response(code)


# Where operations chain (create → read → update → delete): OpenAPI links, which a client
# generator and Schemathesis' stateful phase follow. (operation, status) → {link: (target, params)}
_LINKS: dict[tuple[str, str], dict[str, tuple[str, dict[str, str]]]] = {
    ("register_agent", "201"): {
        f"{target}": (target, {"agent_id": "$response.body#/agent_id"})
        for target in ("get_agent", "update_agent", "list_facts", "stats")
    },
    ("record_messages", "202"): {
        target: (
            target,
            {"agent_id": "$request.path.agent_id", "session_id": "$request.path.session_id"},
        )
        for target in ("memory_context", "form_now", "session_start", "session_end")
    },
    ("list_facts", "200"): {
        target: (
            target,
            {"agent_id": "$request.path.agent_id", "fact_id": "$response.body#/facts/0/fact_id"},
        )
        for target in ("get_fact", "fact_history", "edit_fact", "delete_fact")
    },
    ("list_reflections", "200"): {
        target: (
            target,
            {
                "agent_id": "$request.path.agent_id",
                "reflection_id": "$response.body#/0/reflection_id",
            },
        )
        for target in ("edit_reflection", "delete_reflection")
    },
    ("edit_consolidated", "200"): {
        "get_consolidated": (
            "get_consolidated",
            {"agent_id": "$request.path.agent_id", "scope": "$request.path.scope"},
        )
    },
}


def _link(operation: dict[str, Any]) -> None:
    for (source, code), links in _LINKS.items():
        if operation.get("operationId") == source and code in operation["responses"]:
            operation["responses"][code]["links"] = {
                name: {"operationId": target, "parameters": params}
                for name, (target, params) in links.items()
            }


def _settings_limits(schema: dict[str, Any], settings: Settings) -> None:
    """Limits that live in settings, stated where a client reads them."""
    search = schema["components"]["schemas"].get("SearchRequest")
    if search is None:
        return
    rag = settings.rag
    search["properties"]["queries"]["maxItems"] = rag.max_queries
    top_k = search["properties"]["top_k"]
    for option in top_k.get("anyOf", [top_k]):
        if option.get("type") == "integer":
            option["minimum"], option["maximum"] = rag.top_k_min, rag.top_k_max


_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _json_schema_bounds(node: Any) -> None:
    """pydantic writes a bound on a validated integer (WholeInt) as a bare "ge": the JSON Schema
    keyword is "minimum" (and so on)."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for short, keyword in _BOUNDS.items():
                if short in node:
                    node[keyword] = node.pop(short)
        for value in node.values():
            _json_schema_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _json_schema_bounds(value)


def _refs(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.removeprefix(_REF))
            else:
                _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)
    return found


def _closure(names: set[str], components: dict[str, Any]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in seen and name in components:
            seen.add(name)
            todo += _refs(components[name], set())
    return seen


# Answered without their empty fields (serve/errors.py dumps them with exclude_none).
_SPARSE = {Problem.__name__, FieldError.__name__}


def _responses_whole(schema: dict[str, Any]) -> None:
    """A response carries every field of its model (a default included), so each field of a
    schema only responses use is required: a generated client types it as present (nullable
    where it may be null), not as possibly missing. Schemas a request also uses keep their
    optional fields, which a client may leave out."""
    components: dict[str, Any] = schema["components"]["schemas"]
    asked: set[str] = set()
    answered: set[str] = set()
    for item in schema.get("paths", {}).values():
        for operation in item.values():
            _refs([operation.get("requestBody"), operation.get("parameters")], asked)
            _refs(operation.get("responses"), answered)
    only_answered = _closure(answered, components) - _closure(asked, components) - _SPARSE
    for name in only_answered:
        properties = components[name].get("properties")
        if properties:
            components[name]["required"] = list(properties)


def install(app: FastAPI, settings: Settings) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title,
            version=app.version,
            summary=app.summary,
            description=app.description,
            routes=app.routes,
        )
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in (Problem, FieldError):
            found = model.model_json_schema(ref_template=_REF + "{model}")
            components.update(found.pop("$defs", {}))
            components[model.__name__] = found
        budgets = RateLimiter.from_settings(settings.rate_limit).budgets
        for path, item in schema.get("paths", {}).items():
            for method, operation in item.items():
                _document(operation, path, method, budgets)
                _link(operation)
        for unused in ("HTTPValidationError", "ValidationError"):
            components.pop(unused, None)
        _json_schema_bounds(schema)
        _settings_limits(schema, settings)
        _responses_whole(schema)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
