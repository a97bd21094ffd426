"""A user's data: exported as `mnemos export --user` writes it, or hard-deleted (issue 15)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from fastapi.responses import StreamingResponse

from client.results import ForgetResult
from memory.lifecycle.exporting import export_chunks, read_for_export
from memory.lookup import require_agent
from serve.auth import ID_PATTERN, EraseAgent, ReadAgent, Svc
from serve.openapi import problems

NDJSON = "application/x-ndjson"

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["users"])
UserPath = Annotated[str, Path(pattern=ID_PATTERN)]


@router.delete(
    "/users/{user_id}",
    responses=problems(
        503,
        s503="The store erased the user, but Temporal could not delete their workflow runs: ask "
        "again to delete the user's own; the detail names the runs of the sessions it deleted",
    ),
)
async def forget_user(agent_id: EraseAgent, user_id: UserPath, svc: Svc) -> ForgetResult:
    """Hard-delete the user's facts (with history), user memory, messages and cache entries of
    this agent, then their closed workflow executions; returns what was deleted. Only a key
    created with ``--erase`` may (403 otherwise). A formation
    running for the user meanwhile writes nothing of them. Agent-scope memory stays."""
    return await svc.memory.forget_user(agent_id, user_id)


@router.get(
    "/users/{user_id}/export",
    response_class=Response,
    responses={
        200: {
            "content": {NDJSON: {"schema": {"type": "string"}}},
            "description": "JSON Lines, streamed: a header, one record a line, an end line "
            "with the counts. A body without the end line was cut midway (a failure after the "
            "first bytes): not the whole export",
        }
    },
)
async def export_user(
    agent_id: ReadAgent,
    user_id: UserPath,
    svc: Svc,
    messages: Annotated[bool, Query(description="The user's messages too")] = False,
) -> Response:
    """Everything this agent holds of the user, in the format of ``mnemos export --agent A --user
    U`` (read back by ``mnemos import file``): what a DELETE of the user would erase of this
    agent's, nothing it keeps (the agent's own memory, a shared session's memory). Of the
    messages, those this agent recorded: in a session shared with another agent, that agent's
    records stay out. Streamed, its facts read a page at a time as it is sent (one changed
    meanwhile may be in its newer version); drawn on the key's erasure budget, as it reads all
    of the user's data."""
    # A typo in the agent id must not read as "this user has no data" (404 as on every route).
    await require_agent(svc.memory.store, agent_id)
    # The store read before the first byte (all but the facts' later pages): a store failure is
    # answered as on any route. The file is then streamed, serialised a chunk at a time between other requests' turns: built
    # whole, a big user's export held the event loop for seconds and its text in memory twice.
    read = await read_for_export(
        svc.memory.store,
        agent_id=agent_id,
        user_id=user_id,
        messages=messages,
        now=svc.memory.clock(),
        # A message line names this agent's session state only (pending_for, withheld_from): a
        # session holding another agent is unknown to the key (serve.auth.foreign_session).
        states_of=(agent_id,),
    )
    filename = f"mnemos-{agent_id}-{user_id}.jsonl"
    return StreamingResponse(
        export_chunks(read),
        media_type=NDJSON,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )
