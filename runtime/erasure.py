"""What Temporal keeps of a forgotten user: their id in the workflow ids and search attributes of
closed executions (and, without a codec key, their fact texts and the memory drafted from their
words in payloads) until the namespace's retention ends. forget_user deletes those executions
right away: the user's own (MnemosUserId), and the runs of the session memory it deleted, which
a session scope's consolidation does not tag with a user."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from memory.logging import get_logger
from memory.models import ScopeKey
from workflows.naming import (
    consolidation_workflow_id,
    formation_workflow_id,
    session_end_workflow_id,
)

# Workflow ids per visibility query: a user of many sessions makes several short queries.
_IDS_PER_QUERY = 50
# Running ones are left to finish: their commits write nothing for the user (the erasure epoch).
_CLOSED = "ExecutionStatus != 'Running'"


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def user_executions_query(user_id: str, agent_id: str | None) -> str:
    """Closed executions of the user (of one agent, or all): running ones are left to finish;
    their commits write nothing for the user (the erasure epoch)."""
    query = f"MnemosUserId = {_quoted(user_id)} AND {_CLOSED}"
    if agent_id is not None:
        query += f" AND MnemosAgentId = {_quoted(agent_id)}"
    return query


def session_workflow_ids(session_scopes: Iterable[str]) -> list[str]:
    """The workflow ids of the agent's runs of each session whose session memory a forget
    deleted (ForgetCounts.session_scopes): formations, ends and the session scope's
    consolidation. By id, as they are deterministic: a consolidation run is tagged with no
    user, and a formation of a session that had two users when it started neither; runs started
    before a change of their search attributes are found too."""
    ids: list[str] = []
    for scope_key in session_scopes:
        # "session:{agent}:{session}": no agent id holds a colon (rules.erasure).
        _, agent_id, session_id = scope_key.split(":", 2)
        key = ScopeKey.session(agent_id, session_id)
        ids += [
            formation_workflow_id(agent_id, session_id),
            session_end_workflow_id(agent_id, session_id),
            consolidation_workflow_id(key),
        ]
    return list(dict.fromkeys(ids))


def workflow_ids_queries(workflow_ids: Sequence[str]) -> list[str]:
    """Closed executions of those workflow ids, a query per batch."""
    return [
        f"WorkflowId IN ({', '.join(_quoted(i) for i in workflow_ids[n : n + _IDS_PER_QUERY])})"
        f" AND {_CLOSED}"
        for n in range(0, len(workflow_ids), _IDS_PER_QUERY)
    ]


async def delete_user_executions(
    client: Client, user_id: str, agent_id: str | None, session_scopes: Iterable[str] = ()
) -> int:
    """Delete the user's closed executions (found by their MnemosUserId), and those of the
    session memory the forget deleted (``session_scopes``: its ForgetCounts' ``session_scopes``,
    found by their workflow ids); returns how many. An execution already gone is skipped; any
    other refusal (Temporal out of reach midway) raises: what is left is not found again once
    the sessions are gone."""
    queries = [
        *workflow_ids_queries(session_workflow_ids(session_scopes)),
        user_executions_query(user_id, agent_id),
    ]
    # A run found by both (a solo session's formation) is deleted once.
    runs: dict[tuple[str, str], None] = {}
    for query in queries:
        async for execution in client.list_workflows(query):
            runs[(execution.id, execution.run_id)] = None
    deleted = 0
    for workflow_id, run_id in runs:
        if await _delete(client, workflow_id, run_id):
            deleted += 1
    return deleted


async def _delete(client: Client, workflow_id: str, run_id: str) -> bool:
    request = DeleteWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
    )
    try:
        await client.workflow_service.delete_workflow_execution(request)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        get_logger(workflow_id=workflow_id).info("execution already deleted")
        return False
    return True
