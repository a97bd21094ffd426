"""Who may call what: the key in the request against the agent in the path.

A key comes as ``Authorization: Bearer mk_…`` or as ``X-API-Key``, never as the memory page's
sign-in cookie (token_of). No or an unknown key: 401. A key not bound to the path's agent, or a
read-only key on a write: 403. A key over its budget for the operation's kind: 429 with
``Retry-After`` (serve/rate_limit.py), before the handler runs. Routes declare ``ReadAgent`` or ``WriteAgent`` for their
``agent_id`` path parameter, so the check cannot be forgotten on one route and not the others;
session routes declare ``KeySession``: a session holding an agent the key is not for is a 404.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, Security, status
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from memory.lookup import unknown_session
from memory.models import Reflection, SessionInfo
from memory.store.base import MemoryStore
from serve.keys import ApiKey
from serve.rate_limit import kind_of
from serve.services import Services, services

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$"
AgentPath = Annotated[str, Path(pattern=ID_PATTERN, description="The agent's id")]
SessionPath = Annotated[str, Path(pattern=ID_PATTERN, description="The session's id")]


def token_of(request: Request) -> str | None:
    """The key a request sends in its headers: the API's and MCP's only ways.

    Not the memory page's cookie: a browser attaches a cookie to every request to the host,
    including a form another page auto-submits, and ``SameSite=Strict`` still lets a page on
    another port of the same host do so (the same site). Only the page's own routes check that
    a write comes from the page's origin (serve/page_guard.py), so here the cookie would let such
    a page form or end sessions, or spend the erasure budget on an export, with the signed-in
    user's key. A header, by contrast, carries only a key its sender already holds: no page can
    make a browser add the user's key to a header."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return request.headers.get("x-api-key") or None


# Declared so that the OpenAPI document names both ways to send a key; token_of reads them.
_BEARER = HTTPBearer(auto_error=False, description="`Authorization: Bearer mk_…`")
_HEADER = APIKeyHeader(name="X-API-Key", auto_error=False, description="The key itself")


async def current_key(
    request: Request,
    svc: Annotated[Services, Depends(services)],
    _bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_BEARER)],
    _header: Annotated[str | None, Security(_HEADER)],
) -> ApiKey:
    token = token_of(request)
    key = await svc.keys.verify(token) if token else None
    if key is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "a valid API key is required (Authorization: Bearer mk_…)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    # Every keyed operation depends on this one function (once per request: FastAPI caches it),
    # so the budget cannot be forgotten on a route. FastAPI puts the matched route in the scope.
    route = request.scope.get("route")
    refusal = svc.limiter.take(key.key_id, kind_of(request.method, getattr(route, "name", "")))
    if refusal is not None:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS, refusal.detail, headers=refusal.headers()
        )
    return key


def check(key: ApiKey, agent_id: str, *, write: bool) -> None:
    if agent_id not in key.agent_ids:
        raise HTTPException(status.HTTP_403_FORBIDDEN, f"this key is not for agent {agent_id!r}")
    if write and key.read_only:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this key is read-only")


async def _read(agent_id: AgentPath, key: Annotated[ApiKey, Depends(current_key)]) -> str:
    check(key, agent_id, write=False)
    return agent_id


async def _write(agent_id: AgentPath, key: Annotated[ApiKey, Depends(current_key)]) -> str:
    check(key, agent_id, write=True)
    return agent_id


async def _erase(agent_id: AgentPath, key: Annotated[ApiKey, Depends(current_key)]) -> str:
    check(key, agent_id, write=True)
    if not key.can_erase:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "this key may not erase users (create one with: mnemos keys create --erase)",
        )
    return agent_id


def foreign_session(agent_ids: Collection[str], session: SessionInfo | None) -> bool:
    """Whether the session holds an agent outside ``agent_ids`` (a key's agent set; the one
    agent of ``mnemos mcp``). Session ids are one namespace for every agent (several agents may
    share a session), so a key for one agent could otherwise join another agent's session by its
    id: read its transcript through its own formation, write into it as any user, erase in it.
    Such a session is none of the caller's business, and answered as an unknown one (404), so
    that its existence is not told either. The store checks the same when a recording joins the
    session (``record_messages(may_join=...)``), in the transaction that writes."""
    return session is not None and not set(session.agent_ids) <= set(agent_ids)


async def session_refusal(
    store: MemoryStore, agent_ids: Collection[str], session_id: str | None
) -> str | None:
    """The refusal of a foreign session (foreign_session), None for any other: the one check of
    every door that takes a session id (the routes, the search body, both MCP servers). In the
    words an unknown session gets (memory.lookup.require_session), so that the answer does not
    tell one from the other."""
    if session_id is not None and foreign_session(agent_ids, await store.get_session(session_id)):
        return unknown_session(session_id)
    return None


async def own_reflection(
    store: MemoryStore, agent_ids: Collection[str], agent_id: str, reflection_id: str
) -> Reflection | None:
    """Agent ``agent_id``'s reflection to a key for ``agent_ids``; None for an unknown one,
    another agent's, or one of a session the key is not for (session_refusal), which the API
    and the page answer as a reflection nobody holds: its id alone must not tell it exists."""
    found = await store.get_reflection(reflection_id)
    if found is None or found.scope_key.agent_id != agent_id:
        return None
    refusal = await session_refusal(store, agent_ids, found.scope_key.session_id)
    return found if refusal is None else None


async def _session(
    session_id: SessionPath,
    key: Annotated[ApiKey, Depends(current_key)],
    svc: Annotated[Services, Depends(services)],
) -> str:
    await own_session(svc, key, session_id)
    return session_id


async def own_session(svc: Services, key: ApiKey, session_id: str | None) -> None:
    """404 for a session holding an agent the key is not for (foreign_session)."""
    refusal = await session_refusal(svc.memory.store, key.agent_ids, session_id)
    if refusal is not None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, refusal)


ReadAgent = Annotated[str, Depends(_read)]
EraseAgent = Annotated[str, Depends(_erase)]
WriteAgent = Annotated[str, Depends(_write)]
CurrentKey = Annotated[ApiKey, Depends(current_key)]
Svc = Annotated[Services, Depends(services)]
KeySession = Annotated[str, Depends(_session)]
