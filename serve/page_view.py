"""What the memory page shows for one agent, gathered through the client and its manager.

The users and sessions come from the store's listings (most recently active first; the
sessions of the chosen user when there is one), counted in full up to ``COUNTED``; any other id
can be typed in. A session shared with an agent the key is not for is not listed: the key does
not know it (serve.auth.foreign_session), and its page is a 404. The facts are the agent's own
(agent scope) on the agent's page and the user's own (user scope) on a user's, in pages of
``FACTS_SHOWN``.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import urlencode

from pydantic import BaseModel

from client.fact_pages import FactPage
from client.management import MemoryManager, ScopeConsolidationStatus, ScopeStats
from memory.directory import AgentUser
from memory.models import (
    ConsolidatedMemory,
    FactFilter,
    Reflection,
    ScopeKey,
    SessionInfo,
)
from memory.search_results import SearchHit, SearchResult
from serve.auth import foreign_session
from serve.runs import Runs, recent_formations
from serve.services import Services

RECENT_REFLECTIONS = 10
FACTS_SHOWN = 50
USERS_SHOWN = 50
SESSIONS_SHOWN = 50
# The users and sessions are read up to this many to count them (the store has no count of them;
# each row is small): the page lists the most recently active ones and says how many there are.
COUNTED = 1000
# The set-aside reflections of a scope are all listed (few: each takes a refusal a person has not
# yet answered); past this many the page lists the newest and says there are more.
SET_ASIDE_SHOWN = 200


class ScopeView(BaseModel):
    key: ScopeKey
    stats: ScopeStats
    status: ScopeConsolidationStatus
    blob: ConsolidatedMemory | None
    reflections: list[Reflection]  # the newest buffered ones and every set-aside one
    more_set_aside: bool = False  # more than SET_ASIDE_SHOWN set aside: the newest are listed


class Listed[T](BaseModel):
    """The first rows of a listing, and how many rows it has (``more``: past ``COUNTED``)."""

    rows: list[T]
    total: int
    more: bool


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
    users: Listed[AgentUser]
    sessions: Listed[SessionInfo]
    scopes: list[ScopeView]
    facts: FactPage
    runs: Runs
    query: str
    ranked: list[Ranked]
    paged: bool = False  # a page past the first (by cursor or offset)

    def facts_at(self, cursor: str | None) -> str:
        """This page (its user, session and query) listing the facts of ``cursor``'s page."""
        params = {"user_id": self.user_id, "session_id": self.session_id, "q": self.query}
        shown = {k: v for k, v in params.items() if v} | ({"cursor": cursor} if cursor else {})
        query = urlencode(shown)
        return f"/ui/agents/{self.agent_id}" + (f"?{query}" if query else "") + "#facts"


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


def _listed[T](rows: list[T], shown: int) -> Listed[T]:
    return Listed[T](rows=rows[:shown], total=min(len(rows), COUNTED), more=len(rows) > COUNTED)


async def scope_view(
    manager: MemoryManager, stats: ScopeStats, status: ScopeConsolidationStatus
) -> ScopeView:
    key = stats.scope_key
    # The set-aside ones are read on their own: one may be older than the whole buffer.
    set_aside = await manager.list_set_aside_reflections(key, limit=SET_ASIDE_SHOWN + 1)
    # The newest of those in no blob hold the newest RECENT_REFLECTIONS buffered ones: at most
    # len(set_aside) of them are set aside.
    newest = await manager.list_reflections(key, limit=RECENT_REFLECTIONS + len(set_aside))
    return ScopeView(
        key=key,
        stats=stats,
        status=status,
        blob=await manager.show_consolidated(key),
        reflections=shown_reflections(newest, set_aside[:SET_ASIDE_SHOWN]),
        more_set_aside=len(set_aside) > SET_ASIDE_SHOWN,
    )


def shown_reflections(newest: list[Reflection], set_aside: list[Reflection]) -> list[Reflection]:
    """The newest buffered reflections, and every set-aside one however old, which only a person
    can put back (by correcting it); newest first. ``newest``: the newest of those in no blob;
    any set-aside one not among them is older than all of them, so it follows them."""
    buffered = [r for r in newest if r.absorbed_into_version is None]
    shown = {r.reflection_id for r in buffered[:RECENT_REFLECTIONS]} | {
        r.reflection_id for r in set_aside
    }
    listed = [r for r in newest if r.reflection_id in shown]
    seen = {r.reflection_id for r in listed}
    return listed + [r for r in set_aside if r.reflection_id not in seen]


def fact_filter(agent_id: str, user_id: str | None) -> FactFilter:
    """A user's page lists the user's own facts; the agent's page the agent's own (mixed, the
    agent's newer facts would push the user's off the page)."""
    return FactFilter(agent_id=agent_id, user_id=user_id, include_agent_scope=user_id is None)


async def agent_view(
    svc: Services,
    agent_ids: Collection[str],
    agent_id: str,
    user_id: str | None,
    session_id: str | None,
    query: str,
    offset: int = 0,
    cursor: str | None = None,
) -> AgentView:
    """The page of ``agent_id`` for a key for ``agent_ids``."""
    manager = svc.manager
    stats = await manager.stats(agent_id, user_id, session_id)
    statuses = await manager.consolidation_status(agent_id, user_id, session_id)
    scopes = [
        await scope_view(manager, s, status)
        for s, status in zip(stats.scopes, statuses, strict=True)
    ]
    flt = fact_filter(agent_id, user_id)
    facts = await manager.list_facts(flt, offset=offset, limit=FACTS_SHOWN, cursor=cursor)
    runs = await recent_formations(
        svc.memory.temporal, agent_id, ui_url=svc.temporal_ui_url, namespace=svc.namespace
    )
    store = svc.memory.store
    users = await store.list_agent_users(agent_id, limit=COUNTED + 1)
    listed = await store.list_agent_sessions(agent_id, user_id=user_id, limit=COUNTED + 1)
    sessions = [s for s in listed if not foreign_session(agent_ids, s)]
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
        users=_listed(users, USERS_SHOWN),
        sessions=_listed(sessions, SESSIONS_SHOWN),
        scopes=scopes,
        facts=facts,
        runs=runs,
        query=query,
        ranked=ranked,
        paged=bool(cursor or offset),
    )
