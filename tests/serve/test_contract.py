"""The OpenAPI document is the contract: Schemathesis generates requests from it (valid ones and
invalid ones, without a key, with methods a path does not take) against the app on a seeded
store, and every check must pass: no server error, documented statuses, content types and
headers, response bodies that match their schema, valid data accepted, invalid data refused.

A fixed budget per operation (``MAX_EXAMPLES``) and a fixed seed keep the run short and
repeatable; agent_id is pinned to the seeded agent so that requests reach the handlers instead
of stopping at 403. Schemathesis reads the document at import time, from an app over nothing
(the document needs no store); the seeded app takes its place for the requests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES
from schemathesis.generation.case import Case
from starlette.types import ASGIApp, Receive, Scope, Send
from temporalio.testing import WorkflowEnvironment

from memory.settings import Settings
from serve.app import create_app
from tests.serve.seeded_app import TOKEN, SeededApp, seeded_app

MAX_EXAMPLES = 8
STATEFUL_STEPS = 6
SEED = 23
# Operations whose coverage phase (boundary cases derived from the document) is skipped: building
# them for these long text bounds (a message's 100,000 characters under its pattern) took ~15 s of
# collection in every pytest worker. tests/serve/test_text_bounds.py checks those edges directly;
# the examples, fuzzing and stateful phases still run on them.
HEAVY = [
    ("POST", "/v1/agents/{agent_id}/sessions/{session_id}/messages"),
    ("PATCH", "/v1/agents/{agent_id}/facts/{fact_id}"),
    ("PUT", "/v1/agents/{agent_id}/scopes/{scope}/consolidated"),
]


class Switch:
    """The app Schemathesis calls: the document-only app first, the seeded one during the tests."""

    def __init__(self, target: ASGIApp) -> None:
        self.target = target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.target(scope, receive, send)


def _document_only() -> ASGIApp:
    memory = MagicMock()
    memory.settings = Settings()
    return create_app(memory, MagicMock())


SWITCH = Switch(_document_only())
CONFIG = SchemathesisConfig.from_dict(
    {
        "seed": SEED,
        "generation": {"max-examples": MAX_EXAMPLES, "mode": "all", "deterministic": True},
        "parameters": {"agent_id": "eve"},
        "auth": {"openapi": {"HTTPBearer": {"bearer": TOKEN}}},
        "phases": {"stateful": {"max-steps": STATEFUL_STEPS}},
        "warnings": False,
        # A message's created_at must lie between 1970 and a day after the recording time: a
        # bound that moves with the clock cannot be stated in the document, so the operation
        # documents it with its 422; and a fact listing's cursor is a token only a listing gives
        # (any text of its pattern is not one). Only there is a 422 for schema-valid data accepted.
        "operations": [
            {
                "include-path": path,
                "checks": {
                    "positive_data_acceptance": {
                        "expected-statuses": [*POSITIVE_DATA_ACCEPTANCE_EXPECTED_STATUSES, "422"]
                    }
                },
            }
            for path in (
                "/v1/agents/{agent_id}/sessions/{session_id}/messages",
                "/v1/agents/{agent_id}/facts",
            )
        ]
        + [
            *(
                {
                    "include-path": path,
                    "include-method": method,
                    "phases": {"coverage": {"enabled": False}},
                }
                for method, path in HEAVY
            ),
        ],
    }
)
schema = schemathesis.openapi.from_asgi("/openapi.json", SWITCH, config=CONFIG)


@pytest.fixture(scope="module", autouse=True)
def seeded(
    dev_env: WorkflowEnvironment, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SeededApp]:
    address = dev_env.client.service_client.config.target_host
    found = seeded_app(address, tmp_path_factory.mktemp("contract"))
    before, SWITCH.target = SWITCH.target, found.asgi
    try:
        yield found
    finally:
        SWITCH.target = before
        found.close()


@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
def test_every_operation_keeps_the_contract(case: Case[Any]) -> None:
    case.call_and_validate()


TestStatefulChains = schema.as_state_machine().TestCase
TestStatefulChains.settings = settings(
    max_examples=3,
    stateful_step_count=STATEFUL_STEPS,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
