"""Errors outside validation keep the one problem shape: 400 for a body that is no JSON, 405 with
every method of the path, 413."""

from __future__ import annotations

import pytest

from serve.limits import MAX_BODY_BYTES
from tests.serve.conftest import Served


async def test_a_method_a_path_does_not_take_is_405_with_every_method_it_takes(
    served: Served,
) -> None:
    async with served.client(served.eve) as c:
        r = await c.put("/v1/agents/eve/facts/f-1")
        assert r.status_code == 405 and r.headers["allow"] == "DELETE, GET, PATCH"
        assert r.json()["type"] == "urn:mnemos:problem:method-not-allowed"
        r = await c.post("/v1/agents/eve", json={})
        assert r.status_code == 405 and r.headers["allow"] == "GET, PATCH"


async def test_a_body_beyond_the_limit_is_413_before_it_is_read(served: Served) -> None:
    async with served.client(served.eve) as c:
        big = b"x" * (MAX_BODY_BYTES + 1)
        r = await c.post("/v1/agents", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and r.headers["content-type"] == "application/problem+json"
    assert r.json()["type"] == "urn:mnemos:problem:content-too-large"


@pytest.mark.parametrize("offset", [2**63, 1_000_000_001, -1])
async def test_an_offset_out_of_range_is_422_not_a_store_error(served: Served, offset: int) -> None:
    async with served.client(served.eve) as c:
        r = await c.get("/v1/agents/eve/facts", params={"offset": offset})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


@pytest.mark.parametrize("body", [b"{nope", b"[1", b"\xff\xfe"])
async def test_a_body_that_is_no_json_is_400_not_a_field_error(served: Served, body: bytes) -> None:
    """The documented 400: a 422 would name a character offset as if it were a field."""
    async with served.client(served.eve) as c:
        r = await c.post(
            "/v1/agents/eve/search", content=body, headers={"content-type": "application/json"}
        )
    assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
    problem = r.json()
    assert problem["type"] == "urn:mnemos:problem:bad-request"
    assert problem["detail"].startswith("the body is not JSON") and "errors" not in problem
