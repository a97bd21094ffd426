"""What Temporal keeps of a forgotten user: their id in the workflow ids and search attributes of
closed executions (and, without a codec key, their fact texts in payloads) until the namespace's
retention ends. forget_user deletes those executions right away."""

from __future__ import annotations

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError

from memory.logging import get_logger


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def user_executions_query(user_id: str, agent_id: str | None) -> str:
    """Closed executions of the user (of one agent, or all): running ones are left to finish;
    their commits write nothing for the user (the erasure epoch)."""
    query = f"MnemosUserId = {_quoted(user_id)} AND ExecutionStatus != 'Running'"
    if agent_id is not None:
        query += f" AND MnemosAgentId = {_quoted(agent_id)}"
    return query


async def delete_user_executions(client: Client, user_id: str, agent_id: str | None) -> int:
    """Delete the user's closed executions; returns how many. Best effort: an execution already
    gone is skipped."""
    deleted = 0
    async for execution in client.list_workflows(user_executions_query(user_id, agent_id)):
        request = DeleteWorkflowExecutionRequest(
            namespace=client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=execution.id, run_id=execution.run_id),
        )
        try:
            await client.workflow_service.delete_workflow_execution(request)
            deleted += 1
        except RPCError as err:
            get_logger(workflow_id=execution.id).warning("execution not deleted", error=str(err))
    return deleted
