"""Facts: search, list, read with history, edit, delete (004 "Managing User Memory")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from client.fact_pages import FactPage
from client.management import MAX_OFFSET, MAX_PAGE
from memory.models import Fact, FactFilter, FactRevision
from memory.search_results import SearchResult
from serve.auth import ID_PATTERN, CurrentKey, ReadAgent, Svc, WriteAgent, own_session
from serve.openapi import problems
from serve.schemas import FactEdit, SearchRequest

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["facts"])
FactPath = Annotated[str, Path(min_length=1, max_length=200, description="The fact's id")]


@router.post(
    "/search",
    responses=problems(
        409, 502, s409="The stored facts were embedded by another model than the configured one"
    ),
)
async def search(
    agent_id: ReadAgent, body: SearchRequest, svc: Svc, key: CurrentKey
) -> SearchResult:
    """Hybrid search over the facts one turn may see; ``debug`` adds both lists and their scores.
    A ``session_id`` holding an agent the key is not for is answered 404, as the session routes
    answer it."""
    await own_session(svc, key, body.session_id)
    return await svc.memory.search_facts(
        agent_id,
        body.queries,
        session_id=body.session_id,
        user_id=body.user_id,
        top_k=body.top_k,
        debug=body.debug,
    )


@router.get("/facts")
async def list_facts(
    agent_id: ReadAgent,
    svc: Svc,
    user_id: Annotated[str | None, Query(pattern=ID_PATTERN)] = None,
    include_agent_scope: bool = True,
    include_invalid: bool = False,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 50,
    cursor: Annotated[
        str | None,
        Query(
            max_length=1024,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="A page's next_cursor (older facts) or prev_cursor (newer ones): pages "
            "read by cursor skip nothing and repeat nothing while facts are deleted or formed, as "
            "an offset may; a fact edited meanwhile moves to the front (it changed last). Not "
            "with an offset.",
        ),
    ] = None,
) -> FactPage:
    """Newest first: the agent's facts and, with ``user_id``, that user's."""
    flt = FactFilter(agent_id=agent_id, user_id=user_id, include_agent_scope=include_agent_scope)
    return await svc.manager.list_facts(
        flt, include_invalid=include_invalid, offset=offset, limit=limit, cursor=cursor
    )


@router.get("/facts/{fact_id}")
async def get_fact(agent_id: ReadAgent, fact_id: FactPath, svc: Svc) -> Fact:
    """The fact with its version and history."""
    return await _any_scope(svc, agent_id, fact_id)


async def _any_scope(svc: Svc, agent_id: str, fact_id: str) -> Fact:
    # show_fact's filter admits user facts only for the filter's user: find the fact's user first.
    found = await svc.memory.store.get_facts([fact_id])
    user_id = found[0].user_id if found and found[0].agent_id == agent_id else None
    return await svc.manager.show_fact(
        fact_id, within=FactFilter(agent_id=agent_id, user_id=user_id)
    )


@router.get("/facts/{fact_id}/history")
async def fact_history(agent_id: ReadAgent, fact_id: FactPath, svc: Svc) -> list[FactRevision]:
    """Every earlier version, oldest first (the current text is the fact's own content)."""
    return list((await _any_scope(svc, agent_id, fact_id)).history)


@router.patch(
    "/facts/{fact_id}",
    responses=problems(
        409,
        502,
        s409="The fact was deleted, another fact holds this text, or it moved past "
        "expected_version",
    ),
)
async def edit_fact(agent_id: WriteAgent, fact_id: FactPath, body: FactEdit, svc: Svc) -> Fact:
    """A correction: a new version; the old text stays in the history. 409 when it moved past
    ``expected_version`` (another edit, a formation's update)."""
    fact = await _any_scope(svc, agent_id, fact_id)
    within = FactFilter(agent_id=agent_id, user_id=fact.user_id)
    return await svc.manager.edit_fact(
        fact_id,
        body.content,
        within=within,
        reason=body.reason,
        expected_version=body.expected_version,
    )


@router.delete("/facts/{fact_id}")
async def delete_fact(agent_id: WriteAgent, fact_id: FactPath, svc: Svc) -> Fact:
    """The fact is kept, marked deleted, and never shown to the agent again."""
    fact = await _any_scope(svc, agent_id, fact_id)
    within = FactFilter(agent_id=agent_id, user_id=fact.user_id)
    return await svc.manager.delete_fact(fact_id, within=within)
