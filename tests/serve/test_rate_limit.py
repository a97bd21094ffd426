"""Each API key's budgets (serve/rate_limit.py): a key over its budget gets a 429 problem with
Retry-After, and the refused request changes nothing; the budget comes back as time passes (a
clock the test moves: no sleeps); keys and kinds have budgets of their own; the HTTP API, the MCP
tools and the memory page draw on the same buckets; the OpenAPI document states the 429."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

import httpx

from memory.settings import Settings
from serve.app import create_app, openapi_document
from serve.errors import Problem
from serve.rate_limit import Budget, Kind, RateLimiter, kind_of
from tests.serve.conftest import Served
from tests.serve.test_mcp_http import live, mcp_session, text


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _limiter(clock: Clock, read: int = 100, write: int = 100, heavy: int = 100) -> RateLimiter:
    """Bursts as given; one token a second refills each bucket."""
    budgets: dict[Kind, Budget] = {
        "read": Budget(1, read),
        "write": Budget(1, write),
        "heavy": Budget(1, heavy),
    }
    return RateLimiter(budgets, clock)


def test_a_bucket_grants_its_burst_then_refuses_until_the_clock_refills_it() -> None:
    clock = Clock()
    limiter = RateLimiter({"write": Budget(2, 3)}, clock)
    assert [limiter.take("k", "write") for _ in range(3)] == [None, None, None]
    refused = limiter.take("k", "write")
    assert refused is not None and refused.retry_after == 1
    assert refused.headers()["Retry-After"] == "1"
    clock.now += 0.25  # half a token: still refused, and the refusal took nothing
    assert limiter.take("k", "write") is not None
    clock.now += 0.25
    assert limiter.take("k", "write") is None
    assert limiter.take("k", "write") is not None
    clock.now += 3600  # an idle hour refills the bucket to its burst, not beyond
    assert [limiter.take("k", "write") for _ in range(4)][-1] is not None


def test_retry_after_is_when_a_token_is_back_in_whole_seconds() -> None:
    clock = Clock()
    limiter = RateLimiter({"heavy": Budget(0.1, 1)}, clock)
    assert limiter.take("k", "heavy") is None
    refused = limiter.take("k", "heavy")
    assert refused is not None and refused.retry_after == 10
    assert refused.headers()["RateLimit-Policy"] == '"heavy";q=1;w=10'
    assert refused.headers()["RateLimit"] == '"heavy";r=0;t=10'
    clock.now += 9.5
    refused = limiter.take("k", "heavy")
    assert refused is not None and refused.retry_after == 1
    clock.now += 0.5
    assert limiter.take("k", "heavy") is None


def test_keys_and_kinds_have_budgets_of_their_own() -> None:
    limiter = _limiter(Clock(), read=1, write=1)
    assert limiter.take("a", "write") is None
    assert limiter.take("a", "write") is not None
    assert limiter.take("a", "read") is None  # reads are not writes
    assert limiter.take("b", "write") is None  # another key is not this one


def test_a_disabled_limiter_never_refuses() -> None:
    settings = Settings(rate_limit={"enabled": False, "write_burst": 1})
    limiter = RateLimiter.from_settings(settings.rate_limit)
    assert all(limiter.take("k", "write") is None for _ in range(1000))


def test_each_operation_draws_on_the_budget_of_what_it_costs() -> None:
    assert kind_of("GET", "memory_context") == "read"
    assert kind_of("POST", "search") == "read"  # a POST that only reads
    assert kind_of("POST", "session_start") == "read"
    assert kind_of("POST", "record_messages") == "write"
    assert kind_of("DELETE", "delete_fact") == "write"
    assert kind_of("DELETE", "forget_user") == "heavy"


def _message(i: int) -> dict[str, Any]:
    return {
        "message_id": f"rl-{i}",
        "role": "user",
        "content": f"Message number {i} about tea",
        "created_at": datetime.now(UTC).isoformat(),
        "user_id": "alice",
    }


def _limited(served: Served, limiter: RateLimiter) -> Served:
    app = create_app(served.memory, served.keys, temporal_ui_url="http://ui.test", limiter=limiter)
    return dataclasses.replace(served, app=app)


async def test_over_budget_is_a_429_problem_that_changes_nothing(served: Served) -> None:
    clock = Clock()
    s = _limited(served, _limiter(clock, read=2, write=2))
    url = "/v1/agents/eve/sessions/s9/messages"
    async with s.client(s.eve) as c:
        for i in range(2):
            r = await c.post(url, json={"messages": [_message(i)], "trigger_formation": False})
            assert r.status_code == 202
        r = await c.post(url, json={"messages": [_message(2)], "trigger_formation": False})
        assert r.status_code == 429
        assert r.headers["content-type"] == "application/problem+json"
        assert r.headers["retry-after"] == "1"
        assert r.headers["ratelimit-policy"] == '"write";q=2;w=2'
        problem = r.json()
        Problem.model_validate(problem)  # the schema the document gives the 429
        assert problem["type"] == "urn:mnemos:problem:too-many-requests"
        assert problem["status"] == 429 and problem["instance"] == url
        assert "write budget" in problem["detail"]

        # reads have their own budget; another key of the same agent has its own buckets
        assert (await c.get("/v1/agents/eve/sessions/s9/context")).status_code == 200
        async with s.client(s.eve_erase) as other:
            r = await other.post(url, json={"messages": [_message(3)], "trigger_formation": False})
            assert r.status_code == 202

        clock.now += 1.0  # one token back: the refused message was never stored
        r = await c.post(url, json={"messages": [_message(2)], "trigger_formation": False})
        assert r.status_code == 202 and r.json()["recorded"]["inserted"] == 1


async def test_erasing_a_user_has_its_own_small_budget(served: Served) -> None:
    clock = Clock()
    s = _limited(served, _limiter(clock, heavy=1))
    async with s.client(s.eve_erase) as c:
        assert (await c.delete("/v1/agents/eve/users/alice")).status_code == 200
        r = await c.delete("/v1/agents/eve/users/bob")
        assert r.status_code == 429 and "heavy budget" in r.json()["detail"]
        assert (await c.get("/v1/agents/eve/facts")).status_code == 200  # reads still go
        clock.now += 1.0
        assert (await c.delete("/v1/agents/eve/users/bob")).status_code == 200


async def test_the_memory_page_draws_on_the_same_budget(served: Served) -> None:
    s = _limited(served, _limiter(Clock(), read=1))
    async with s.client(s.eve) as c:
        assert (await c.get("/v1/agents/eve")).status_code == 200
    cookies = {"mnemos_key": s.eve}
    transport = httpx.ASGITransport(app=s.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t", cookies=cookies) as ui:
        r = await ui.get("/ui/agents/eve")
    assert r.status_code == 429 and r.headers["retry-after"] == "1"
    assert "read budget" in r.text


async def test_mcp_tools_share_the_keys_budget(served: Served) -> None:
    clock = Clock()
    s = _limited(served, _limiter(clock, read=2, write=1))
    async with s.client(s.eve) as c:
        r = await c.post(
            "/v1/agents/eve/sessions/s9/messages",
            json={"messages": [_message(0)], "trigger_formation": False},
        )
        assert r.status_code == 202  # the one write of the budget, spent over HTTP
    async with live(s) as base, mcp_session(base, s.eve) as mcp:
        note = {"agent_id": "eve", "session_id": "s9", "note": "Alice likes oolong"}
        refused = await mcp.call_tool("remember", note)
        assert refused.is_error and "rate limited" in text(refused)
        assert "retry after 1 s" in text(refused)
        read = {"agent_id": "eve", "session_id": "s9"}
        assert not (await mcp.call_tool("context", read)).is_error
        assert not (await mcp.call_tool("context", read)).is_error
        async with s.client(s.eve) as c:  # MCP spent the reads: HTTP is refused too
            assert (await c.get("/v1/agents/eve/sessions/s9/context")).status_code == 429
        clock.now += 1.0
        remembered = await mcp.call_tool("remember", note)
        assert not remembered.is_error, text(remembered)


def test_the_document_states_429_on_every_keyed_operation() -> None:
    document = openapi_document(Settings())
    keyed = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            if not operation.get("security"):
                assert "429" not in responses, (method, path)
                continue
            keyed += 1
            answer = responses["429"]
            assert answer["headers"]["Retry-After"]["required"] is True
            schema = answer["content"]["application/problem+json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/Problem"}
            kind = kind_of(method, operation["operationId"])
            assert f"over its {kind} budget" in answer["description"], (method, path)
    assert keyed >= 20
    forget = document["paths"]["/v1/agents/{agent_id}/users/{user_id}"]["delete"]
    assert "heavy budget (1/s, bursts of 30" in forget["responses"]["429"]["description"]
    off = openapi_document(Settings(rate_limit={"enabled": False}))
    assert not any(
        "429" in op["responses"] for item in off["paths"].values() for op in item.values()
    )
