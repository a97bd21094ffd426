"""Readable workflow ids and the search attributes operators filter on in the Temporal UI.

One workflow id per unit of serialisation: Temporal runs at most one workflow per id, which is what
makes "one formation per (session, agent)" and "one consolidator per scope key" hold across workers.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

from memory.models import ScopeKey

AGENT_ID = SearchAttributeKey.for_keyword("MnemosAgentId")
USER_ID = SearchAttributeKey.for_keyword("MnemosUserId")
SESSION_ID = SearchAttributeKey.for_keyword("MnemosSessionId")
OUTCOME = SearchAttributeKey.for_keyword("MnemosOutcome")
ALL_KEYS = (AGENT_ID, USER_ID, SESSION_ID, OUTCOME)

# Formation steps that took their fallback, by step (a workflow metric: replay-safe).
DEGRADED_METRIC = "mnemos_formation_degraded"
# Facts extracted and not formed, past a window's bound (memory/pipeline/pieces.py), by the bound
# reached: "facts" or "text" (a workflow metric: replay-safe).
OVER_BOUND_METRIC = "mnemos_formation_facts_over_bound"

# A memo key: until when a run waits out a durable timer it set itself (an outage wait: up to
# hours, no event meanwhile), an ISO time. Who polls the run (EndSession) reads it as "waiting,
# not stuck" until then.
WAITING_UNTIL = "waiting_until"

FORM_WORKFLOW = "FormMemories"
CONSOLIDATE_WORKFLOW = "ConsolidateScope"
COLD_SESSIONS_WORKFLOW = "ColdSessions"
END_SESSION_WORKFLOW = "EndSession"


def formation_workflow_id(agent_id: str, session_id: str) -> str:
    return f"form:{agent_id}:{session_id}"


def session_end_workflow_id(agent_id: str, session_id: str) -> str:
    return f"end:{agent_id}:{session_id}"


def consolidation_workflow_id(key: ScopeKey) -> str:
    return f"consolidate:{key.key}"


# One cold-sessions schedule per task queue: deployments (and tests) sharing a namespace each scan
# their own store. Temporal appends the fire time to the workflow id of each scheduled run.
def cold_sessions_schedule_id(task_queue: str) -> str:
    return f"mnemos-cold-sessions:{task_queue}"


def cold_sessions_workflow_id(task_queue: str) -> str:
    return f"cold-sessions:{task_queue}"


def attributes(
    agent_id: str, *, user_id: str | None = None, session_id: str | None = None
) -> TypedSearchAttributes:
    pairs: list[SearchAttributePair[str]] = [SearchAttributePair(AGENT_ID, agent_id)]
    if user_id:
        pairs.append(SearchAttributePair(USER_ID, user_id))
    if session_id:
        pairs.append(SearchAttributePair(SESSION_ID, session_id))
    return TypedSearchAttributes(pairs)


def scope_key_attributes(key: ScopeKey) -> TypedSearchAttributes:
    return attributes(key.agent_id, user_id=key.user_id, session_id=key.session_id)
