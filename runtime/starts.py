"""Starting the serialised workflows the way every caller must: signal-with-start under their one id.

``form:{agent}:{session}`` and ``consolidate:{scope key}`` are what serialise formations and
consolidations across processes. Signal-with-start either starts the workflow or, when it runs
already, signals it to go round once more after its current pass, so a request is never dropped
and a range is never formed twice, whoever asks (hot trigger, cold job, end of a session). A
session's end likewise reaches the one ``end:{agent}:{session}``: a run already going forms again
what was said before this end, and answers this caller too once that is formed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from temporalio.client import Client, WorkflowHandle

from memory.models import ScopeKey, SessionInfo
from memory.pipeline.types import ConsolidationRequest, FormationRequest, SessionEndRequest
from memory.settings import Settings
from workflows.naming import (
    CONSOLIDATE_WORKFLOW,
    END_SESSION_WORKFLOW,
    FORM_WORKFLOW,
    attributes,
    consolidation_workflow_id,
    formation_workflow_id,
    scope_key_attributes,
    session_end_workflow_id,
)
from workflows.summary import ConsolidationSummary, FormationSummary, SessionEndSummary


def _participant(session: SessionInfo) -> str | None:
    """The user a run is tagged with (MnemosUserId, by which `forget` deletes a user's closed
    runs): the agent's one participant, in a group chat too, since the run's payloads carry
    their words. Not scopes.single_user, which decides what memory is shown and formed."""
    return session.user_ids[0] if len(session.user_ids) == 1 else None


async def start_formation(
    client: Client, settings: Settings, session: SessionInfo, agent_id: str, *, force: bool
) -> WorkflowHandle[Any, FormationSummary]:
    """Ask the one FormMemories of (session, agent) to run; its handle follows continue-as-new."""
    user_id = _participant(session)
    return await client.start_workflow(
        FORM_WORKFLOW,
        FormationRequest(
            session_id=session.session_id,
            agent_id=agent_id,
            force=force,
            retries=settings.retries,
            llm_task_queue=settings.temporal.llm_task_queue,
        ),
        id=formation_workflow_id(agent_id, session.session_id),
        task_queue=settings.temporal.task_queue,
        start_signal="request",
        start_signal_args=[force],
        search_attributes=attributes(agent_id, user_id=user_id, session_id=session.session_id)
        if settings.temporal.search_attributes
        else None,
        result_type=FormationSummary,
    )


async def request_consolidation(
    client: Client, settings: Settings, key: ScopeKey, *, force: bool
) -> WorkflowHandle[Any, ConsolidationSummary]:
    """Ask the one ConsolidateScope of ``key`` to run; its handle follows continue-as-new."""
    return await client.start_workflow(
        CONSOLIDATE_WORKFLOW,
        ConsolidationRequest(
            key=key,
            force=force,
            retries=settings.retries,
            llm_task_queue=settings.temporal.llm_task_queue,
        ),
        id=consolidation_workflow_id(key),
        task_queue=settings.temporal.task_queue,
        start_signal="request",
        start_signal_args=[force],
        search_attributes=scope_key_attributes(key)
        if settings.temporal.search_attributes
        else None,
        result_type=ConsolidationSummary,
    )


async def start_session_end(
    client: Client, settings: Settings, session: SessionInfo, agent_id: str, ended_at: datetime
) -> WorkflowHandle[Any, SessionEndSummary]:
    """Start the one EndSession of (agent, session), or signal the one running that the session
    ended again: it forms what was said before this end, too, before it answers."""
    user_id = _participant(session)
    return await client.start_workflow(
        END_SESSION_WORKFLOW,
        SessionEndRequest(
            session_id=session.session_id,
            agent_id=agent_id,
            ended_at=ended_at,
            retries=settings.retries,
        ),
        id=session_end_workflow_id(agent_id, session.session_id),
        task_queue=settings.temporal.task_queue,
        start_signal="ended",
        search_attributes=attributes(agent_id, user_id=user_id, session_id=session.session_id)
        if settings.temporal.search_attributes
        else None,
        result_type=SessionEndSummary,
    )
