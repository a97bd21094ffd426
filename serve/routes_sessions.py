"""Per agent and session: record messages, form, start and end, read the memory context."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from temporalio.service import RPCError

from client.results import SessionEnd
from serve.auth import ID_PATTERN, CurrentKey, KeySession, ReadAgent, Svc, WriteAgent
from serve.errors import TEMPORAL_UNREACHABLE, log, temporal_unreachable
from serve.openapi import problems
from serve.schemas import (
    ContextResponse,
    FormStarted,
    RecordRequest,
    RecordResponse,
    SessionStartRequest,
)
from workflows.naming import formation_workflow_id
from workflows.summary import FormationSummary

router = APIRouter(prefix="/v1/agents/{agent_id}/sessions/{session_id}", tags=["sessions"])
UserQuery = Annotated[str | None, Query(pattern=ID_PATTERN)]
_FORMS = problems(
    502,
    503,
    s502="The formation failed for its LLM or embedding provider (a bad key, an unknown model): "
    "`detail` names the run and what the provider answered; the messages stay stored, unformed",
    s503="Temporal, which runs the formation, cannot be reached: ask again later",
)


@router.post(
    "/messages",
    status_code=status.HTTP_202_ACCEPTED,
    responses=problems(
        409, s409="A message id the session holds, sent with another content, role or user id"
    ),
)
async def record_messages(
    agent_id: WriteAgent, session_id: KeySession, body: RecordRequest, svc: Svc, key: CurrentKey
) -> RecordResponse:
    """Store the messages (idempotent by message_id: a message sent again is a duplicate; a
    message id sent again with another content, role or user id is 409, and nothing of the batch
    is stored: an edit, or another speaker's words, is a new message). When the thresholds are met a formation starts in Temporal and its
    workflow id comes back; it runs after this answer.

    Every created_at must lie between 1970-01-01 and one day after the recording time (a bound
    that moves with the clock, so it is not in the schema): otherwise 422, and nothing of the
    batch is stored.

    A session holding an agent the key is not for is 404, as on every session route; the store
    checks it again in the transaction that writes, so of two keys recording at once into a new
    session, the second to commit gets the 404 and nothing of its batch is stored."""
    recorded = await svc.memory.record_messages(
        agent_id, session_id, body.messages, may_join=key.agent_ids
    )
    trigger = None
    if body.trigger_formation:
        trigger = await svc.memory.maybe_form_memories(agent_id, session_id)
    return RecordResponse(recorded=recorded, formation=trigger)


@router.post(
    "/form",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=None,  # one of two bodies, by status: both are documented here
    responses={
        202: {"model": FormStarted, "description": "Started; it runs after this answer"},
        200: {"model": FormationSummary, "description": "wait=true: the run's summary"},
        **_FORMS,
    },
)
async def form_now(
    agent_id: WriteAgent,
    session_id: KeySession,
    svc: Svc,
    response: Response,
    wait: bool = False,
) -> FormStarted | FormationSummary:
    """Form now, below the thresholds too. ``wait=true`` answers 200 with the run's summary, or
    502 when the run failed for its provider (502 needs the wait: without it the run fails after
    this answer). 503 while Temporal cannot be reached."""
    summary = await svc.memory.form_memories(agent_id, session_id, force=True, wait=wait)
    if summary is not None:
        response.status_code = status.HTTP_200_OK
        return summary
    return FormStarted(workflow_id=formation_workflow_id(agent_id, session_id))


@router.post("/start")
async def session_start(
    agent_id: ReadAgent, session_id: KeySession, body: SessionStartRequest, svc: Svc
) -> ContextResponse:
    """The memory context for the first turn; the session need not have messages yet."""
    xml = await svc.memory.on_session_start(agent_id, session_id, body.user_id)
    return ContextResponse(
        agent_id=agent_id, session_id=session_id, user_id=body.user_id, context=xml
    )


@router.post(
    "/end",
    responses=problems(
        502,
        503,
        s502="The end's formation or consolidation failed for its LLM or embedding provider: "
        "`detail` names the run and what the provider answered. The session stays ended; the "
        "cold-sessions job finishes it, or POST …/end again once the provider answers",
        s503="Temporal cannot be reached. The session is marked ended, its end may not have "
        "started: POST …/end again (it starts the end, or reaches the one running, which forms what was said "
        "before this end too)",
    ),
)
async def session_end(agent_id: WriteAgent, session_id: KeySession, svc: Svc) -> SessionEnd:
    """Form the rest and consolidate the session memory; answers when both are done. Asked
    again, it ends the session again: it starts the end, or reaches the one running, which then
    forms and consolidates what was said before this end too."""
    try:
        return await svc.memory.on_session_end(agent_id, session_id)
    except RPCError as e:
        if not temporal_unreachable(e):
            raise
        # The store marked the end first (MemoryClient.end_session): nothing is lost, and the
        # same request, repeated, starts what did not start (or the cold-sessions job does).
        log.warning(
            "Temporal unreachable: session marked ended, its end not started",
            agent_id=agent_id,
            session_id=session_id,
            error=e.message,
        )
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE,
            f"{TEMPORAL_UNREACHABLE}: the session is marked ended, but its end (forming the rest, "
            "consolidating the session) may not have started: POST …/end again",
        ) from e


@router.get(
    "/context",
    response_model=ContextResponse,
    responses={200: {"content": {"application/xml": {}}}},
)
async def memory_context(
    agent_id: ReadAgent,
    session_id: KeySession,
    request: Request,
    svc: Svc,
    user_id: UserQuery = None,
    format: Literal["xml", "json"] | None = None,
) -> Response | ContextResponse:
    """The ``<MemoryContext>`` XML; JSON with ``format=json`` or ``Accept: application/json``."""
    xml = await svc.memory.memory_context(agent_id, session_id, user_id=user_id)
    wants_json = format == "json" or (
        format is None and "application/json" in request.headers.get("accept", "")
    )
    if wants_json:
        return ContextResponse(
            agent_id=agent_id, session_id=session_id, user_id=user_id, context=xml
        )
    return Response(xml, media_type="application/xml")
