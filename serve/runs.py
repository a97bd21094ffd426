"""Recent formation runs of an agent, from Temporal's visibility (our search attributes).

The list is a convenience of the page: a server without advanced visibility or without our
search attributes registered yields a note instead of an error.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from urllib.parse import quote

import structlog
from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecution
from temporalio.service import RPCError

from serve.errors import temporal_unreachable
from workflows.naming import AGENT_ID, FORM_WORKFLOW, SESSION_ID, USER_ID

LIST_SECONDS = 3.0
log = structlog.get_logger("serve.runs")


class Run(BaseModel):
    workflow_id: str
    run_id: str
    status: str
    started_at: datetime
    closed_at: datetime | None
    session_id: str | None
    user_id: str | None
    summary: str
    url: str


class Runs(BaseModel):
    runs: list[Run]
    note: str = ""  # why the list is empty or partial


def run_url(ui_url: str, namespace: str, workflow_id: str, run_id: str) -> str:
    wf = quote(workflow_id, safe="")
    return f"{ui_url}/namespaces/{quote(namespace, safe='')}/workflows/{wf}/{run_id}/history"


def formation_query(agent_id: str) -> str:
    # agent ids are checked against the Id pattern (no quotes), so this cannot be injected.
    return f'WorkflowType = "{FORM_WORKFLOW}" AND {AGENT_ID.name} = "{agent_id}"'


async def _run(wf: WorkflowExecution, ui_url: str, namespace: str) -> Run:
    memo = await wf.memo()
    attrs = wf.typed_search_attributes
    summary = memo.get("summary")
    return Run(
        workflow_id=wf.id,
        run_id=wf.run_id,
        status=wf.status.name if wf.status is not None else "UNKNOWN",
        started_at=wf.start_time,
        closed_at=wf.close_time,
        session_id=attrs.get(SESSION_ID),
        user_id=attrs.get(USER_ID),
        summary=summary if isinstance(summary, str) else "",
        url=run_url(ui_url, namespace, wf.id, wf.run_id),
    )


async def recent_formations(
    client: Client, agent_id: str, *, ui_url: str, namespace: str, limit: int = 10
) -> Runs:
    async def collect() -> list[Run]:
        found: list[Run] = []
        async for wf in client.list_workflows(formation_query(agent_id), limit=limit):
            found.append(await _run(wf, ui_url, namespace))
        return found

    try:
        return Runs(runs=await asyncio.wait_for(collect(), LIST_SECONDS))
    except Exception as e:
        # Its message names the transport's failure (addresses, OS errors, TLS): the logs', not
        # the page's, whoever holds a key (as serve/errors.py answers the API).
        log.warning(
            "formation runs not listed", agent_id=agent_id, error=f"{type(e).__name__}: {e}"
        )
        return Runs(runs=[], note=f"formation runs are not listed: {_why(e)}")


def _why(e: Exception) -> str:
    """What the page may say of a listing that failed: its kind, never its message."""
    if isinstance(e, TimeoutError):
        return f"Temporal did not answer within {LIST_SECONDS:g} s"
    # A client that cannot connect raises RuntimeError ("Failed client connect: ...").
    if temporal_unreachable(e) or isinstance(e, RuntimeError):
        return "Temporal is unreachable"
    if isinstance(e, RPCError):
        # An answer, not a transport's failure: most often a server without advanced
        # visibility or without our search attributes registered.
        return "Temporal refused the query (its reason is in the server's log)"
    return "an error (in the server's log)"
