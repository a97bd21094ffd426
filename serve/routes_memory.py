"""Reflections, consolidated blobs, stats and consolidation status of one agent's scopes.

A session's memory is of its conversation: when the session holds an agent the key is not for, it
is answered as an unknown session (serve.auth.own_session), as the session routes answer it."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from client.management import MemoryStats, ScopeConsolidationStatus
from memory.errors import NotFoundError
from memory.models import ConsolidatedMemory, Reflection, ScopeKey
from serve.auth import (
    ID_PATTERN,
    CurrentKey,
    ReadAgent,
    Svc,
    WriteAgent,
    own_reflection,
    own_session,
)
from serve.openapi import problems
from serve.schemas import ConsolidatedEdit, ReflectionEdit

router = APIRouter(prefix="/v1/agents/{agent_id}", tags=["memory"])
ReflectionPath = Annotated[str, Path(min_length=1, max_length=200)]
OptionalId = Annotated[str | None, Query(pattern=ID_PATTERN)]
_ID = ID_PATTERN.strip("^$")
# The scope and the id it needs in one path segment, so the schema itself says which ids a
# scope takes: "agent", "user:<user_id>" or "session:<session_id>".
ScopePath = Annotated[
    str,
    Path(
        pattern=f"^(agent|user:{_ID}|session:{_ID})$",
        description='"agent", "user:<user_id>" or "session:<session_id>"',
        examples=["agent", "user:alice", "session:s1"],
    ),
]


def _key(agent_id: str, scope: str) -> ScopeKey:
    kind, _, ident = scope.partition(":")
    if kind == "user":
        return ScopeKey.user(agent_id, ident)
    if kind == "session":
        return ScopeKey.session(agent_id, ident)
    return ScopeKey.agent(agent_id)


async def _own_scope(svc: Svc, key: CurrentKey, agent_id: str, scope: str) -> ScopeKey:
    """The scope's key; 404 for a session's that holds an agent the key is not for."""
    scope_key = _key(agent_id, scope)
    await own_session(svc, key, scope_key.session_id)
    return scope_key


@router.get("/scopes/{scope}/reflections")
async def list_reflections(
    agent_id: ReadAgent,
    scope: ScopePath,
    svc: Svc,
    key: CurrentKey,
    include_absorbed: bool = False,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> list[Reflection]:
    """Newest first; the buffered ones wait for the scope's next consolidation."""
    scope_key = await _own_scope(svc, key, agent_id, scope)
    return await svc.manager.list_reflections(
        scope_key, include_absorbed=include_absorbed, limit=limit
    )


async def _reflection_key(svc: Svc, key: CurrentKey, agent_id: str, reflection_id: str) -> ScopeKey:
    found = await own_reflection(svc.memory.store, key.agent_ids, agent_id, reflection_id)
    if found is None:
        raise NotFoundError(f"no reflection {reflection_id!r}")
    return found.scope_key


@router.patch("/reflections/{reflection_id}", responses=problems(409))
async def edit_reflection(
    agent_id: WriteAgent,
    reflection_id: ReflectionPath,
    body: ReflectionEdit,
    svc: Svc,
    key: CurrentKey,
) -> Reflection:
    """Refine a buffered reflection; 409 once consolidated (edit the blob instead), or when its
    text is no longer ``expected_content``."""
    scope_key = await _reflection_key(svc, key, agent_id, reflection_id)
    return await svc.manager.edit_reflection(
        scope_key, reflection_id, body.content, expected_content=body.expected_content
    )


@router.delete(
    "/reflections/{reflection_id}", status_code=status.HTTP_204_NO_CONTENT, responses=problems(409)
)
async def delete_reflection(
    agent_id: WriteAgent, reflection_id: ReflectionPath, svc: Svc, key: CurrentKey
) -> None:
    """Drop a buffered reflection; 409 once consolidated (edit the blob instead)."""
    scope_key = await _reflection_key(svc, key, agent_id, reflection_id)
    await svc.manager.delete_reflection(scope_key, reflection_id)


@router.get("/scopes/{scope}/consolidated")
async def get_consolidated(
    agent_id: ReadAgent, scope: ScopePath, svc: Svc, key: CurrentKey
) -> ConsolidatedMemory:
    """The scope's consolidated memory; 404 before its first consolidation or edit."""
    scope_key = await _own_scope(svc, key, agent_id, scope)
    await svc.manager.stats(agent_id)  # 404 for an unknown agent, not "no blob yet"
    blob = await svc.manager.show_consolidated(scope_key)
    if blob is None:
        raise NotFoundError(f"{scope_key.key} has no consolidated memory yet")
    return blob


@router.put("/scopes/{scope}/consolidated", responses=problems(409))
async def edit_consolidated(
    agent_id: WriteAgent, scope: ScopePath, body: ConsolidatedEdit, svc: Svc, key: CurrentKey
) -> ConsolidatedMemory:
    """Replace the blob by this text; 409 when it moved past ``expected_version``."""
    scope_key = await _own_scope(svc, key, agent_id, scope)
    return await svc.manager.edit_consolidated(
        scope_key, body.content, expected_version=body.expected_version
    )


@router.get("/stats")
async def stats(
    agent_id: ReadAgent,
    svc: Svc,
    key: CurrentKey,
    user_id: OptionalId = None,
    session_id: OptionalId = None,
) -> MemoryStats:
    await own_session(svc, key, session_id)
    return await svc.memory.memory_stats(agent_id, user_id, session_id)


@router.get("/consolidation-status")
async def consolidation_status(
    agent_id: ReadAgent,
    svc: Svc,
    key: CurrentKey,
    user_id: OptionalId = None,
    session_id: OptionalId = None,
) -> list[ScopeConsolidationStatus]:
    await own_session(svc, key, session_id)
    return await svc.memory.consolidation_status(agent_id, user_id, session_id)
