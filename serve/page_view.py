"""What the memory page shows for one agent, gathered through the client and its manager.

The users and sessions come from the store's listings (most recently active first; the
sessions of the chosen user when there is one); any other id can be typed in.
"""

from __future__ import annotations

from pydantic import BaseModel

from client.management import FactPage, ScopeConsolidationStatus, ScopeStats
from memory.directory import AgentUser
from memory.models import ConsolidatedMemory, FactFilter, Reflection, ScopeKey, SessionInfo
from memory.search_results import SearchHit, SearchResult
from serve.runs import Runs, recent_formations
from serve.services import Services

RECENT_REFLECTIONS = 10
FACTS_SHOWN = 50
USERS_SHOWN = 50
SESSIONS_SHOWN = 50


class ScopeView(BaseModel):
    key: ScopeKey
    stats: ScopeStats
    status: ScopeConsolidationStatus
    blob: ConsolidatedMemory | None
    reflections: list[Reflection]


class Ranked(BaseModel):
    """One search hit with the scores behind its rank: each list's own, and the fused ones."""

    hit: SearchHit
    rrf: float | None
    vector: float | None  # best cosine over the queries (None: not in the vector list)
    text: float | None  # best BM25-like score (None: not in the text list)
    below: list[str] = []  # the lists where it stayed under that list's threshold


class AgentView(BaseModel):
    agent_id: str
    user_id: str | None
    session_id: str | None
    users: list[AgentUser]
    sessions: list[SessionInfo]
    scopes: list[ScopeView]
    facts: FactPage
    runs: Runs
    query: str
    ranked: list[Ranked]


def ranking(result: SearchResult) -> list[Ranked]:
    vector: dict[str, float] = {}
    text: dict[str, float] = {}
    passed: set[tuple[str, str]] = set()
    rrf: dict[str, float] = {}
    if result.debug is not None:
        for lst in result.debug.lists:
            into = vector if lst.source == "vector" else text
            for c in lst.candidates:
                into[c.fact_id] = max(c.score, into.get(c.fact_id, c.score))
                if c.rank is not None:
                    passed.add((lst.source, c.fact_id))
        rrf = {f.fact_id: f.rrf for f in result.debug.fused}
    return [
        Ranked(
            hit=h,
            rrf=rrf.get(h.fact_id),
            vector=vector.get(h.fact_id),
            text=text.get(h.fact_id),
            below=[
                source
                for source, scores in (("vector", vector), ("text", text))
                if h.fact_id in scores and (source, h.fact_id) not in passed
            ],
        )
        for h in result.hits
    ]


async def agent_view(
    svc: Services, agent_id: str, user_id: str | None, session_id: str | None, query: str
) -> AgentView:
    manager = svc.manager
    stats = await manager.stats(agent_id, user_id, session_id)
    statuses = await manager.consolidation_status(agent_id, user_id, session_id)
    scopes = [
        ScopeView(
            key=s.scope_key,
            stats=s,
            status=status,
            blob=await manager.show_consolidated(s.scope_key),
            reflections=await manager.list_reflections(s.scope_key, limit=RECENT_REFLECTIONS),
        )
        for s, status in zip(stats.scopes, statuses, strict=True)
    ]
    flt = FactFilter(agent_id=agent_id, user_id=user_id)
    facts = await manager.list_facts(flt, limit=FACTS_SHOWN)
    runs = await recent_formations(
        svc.memory.temporal, agent_id, ui_url=svc.temporal_ui_url, namespace=svc.namespace
    )
    store = svc.memory.store
    users = await store.list_agent_users(agent_id, limit=USERS_SHOWN)
    sessions = await store.list_agent_sessions(agent_id, user_id=user_id, limit=SESSIONS_SHOWN)
    ranked: list[Ranked] = []
    if query.strip():
        # A person looking is not the agent's use: the hits' "Used" counts stay as they are.
        result = await svc.memory.search_facts(
            agent_id, query, session_id=session_id, user_id=user_id, debug=True, touch=False
        )
        ranked = ranking(result)
    return AgentView(
        agent_id=agent_id,
        user_id=user_id,
        session_id=session_id,
        users=users,
        sessions=sessions,
        scopes=scopes,
        facts=facts,
        runs=runs,
        query=query,
        ranked=ranked,
    )
