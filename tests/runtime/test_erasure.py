"""Deleting a forgotten user's runs: a run already gone is skipped, but Temporal going away midway
is raised, so the forget says which runs are left (a later forget cannot find the runs of the
sessions it deleted: those sessions are gone from the store)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from runtime.erasure import delete_user_executions


class _Temporal:
    """Lists one run of the session's consolidation and one of the user's; deletes answer
    ``status`` (None: deleted)."""

    namespace = "default"

    def __init__(self, status: RPCStatusCode | None) -> None:
        self.status = status
        self.deleted: list[str] = []
        self.workflow_service = self

    async def delete_workflow_execution(self, request: Any) -> None:
        if self.status is not None:
            raise RPCError("refused", self.status, b"")
        self.deleted.append(request.workflow_execution.workflow_id)

    def list_workflows(self, query: str) -> AsyncIterator[Any]:
        async def runs() -> AsyncIterator[Any]:
            found = "consolidate:session:eve:s1" if "WorkflowId IN" in query else "form:eve:s2"
            yield SimpleNamespace(id=found, run_id="r1")

        return runs()


async def _delete(temporal: _Temporal) -> int:
    client: Client = temporal  # type: ignore[assignment]
    return await delete_user_executions(client, "alice", "eve", ["session:eve:s1"])


async def test_the_session_runs_and_the_users_are_deleted() -> None:
    temporal = _Temporal(None)
    assert await _delete(temporal) == 2
    assert temporal.deleted == ["consolidate:session:eve:s1", "form:eve:s2"]


async def test_a_run_already_gone_is_skipped() -> None:
    assert await _delete(_Temporal(RPCStatusCode.NOT_FOUND)) == 0


async def test_temporal_going_away_midway_is_raised_not_counted_as_done() -> None:
    with pytest.raises(RPCError) as refused:
        await _delete(_Temporal(RPCStatusCode.UNAVAILABLE))
    assert refused.value.status == RPCStatusCode.UNAVAILABLE
