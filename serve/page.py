"""The memory page: server-rendered HTML and plain forms over the same services as the API.

Sign-in stores the API key in an HttpOnly, SameSite=Strict cookie, which only these routes read
(the API and MCP take a key in a header only: serve.auth.token_of); every page checks the key
against the agent in its path, as the API does, and draws on the key's read or write budget, the
same as the API's (serve/rate_limit.py). SameSite stops other sites only: a page on another port
of the same host is the same site, and its forms would carry the cookie. So every write (and the
sign-in and sign-out) must also come from this origin (``_same_origin``), or is refused before
its form is read. Writes answer with a redirect (post/redirect/get) carrying a notice code, shown
as one of the page's own sentences; a write refused by the memory answers its error page at
once. No page is cached (signed out, Back shows nothing), and an invalid input (an id, a query,
an empty box, a form too large to read) answers the page's error page, not the API's JSON
problem; so does the store out of reach (a 503: retry later).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BeforeValidator, StringConstraints

from client.management import MAX_OFFSET
from memory.errors import (
    ConflictError,
    InvalidInputError,
    MnemosError,
    NotFoundError,
    StoreUnavailableError,
)
from memory.models import Fact, FactFilter, ScopeKey
from memory.settings import Scope
from serve.auth import ID_PATTERN, AgentPath, Svc, foreign_session, own_reflection, session_refusal
from serve.errors import status_of
from serve.keys import ApiKey
from serve.page_route import COOKIE, NOTICES, PageRoute, back_to, key_for, refused, render, url_of
from serve.page_sources import fact_view
from serve.page_view import agent_view


def _given(value: object) -> object:
    """An empty box is a box not filled in: the "Open" form sends both of its boxes."""
    return None if isinstance(value, str) and not value.strip() else value


_Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
OptId = Annotated[_Id | None, BeforeValidator(_given), Query()]
FormId = Annotated[_Id | None, BeforeValidator(_given), Form()]
QUERY_CHARS = 2000

router = APIRouter(prefix="/ui", include_in_schema=False, route_class=PageRoute)


@router.get("/login")
async def login_form(request: Request) -> Response:
    return render(request, "login.html", {})


@router.post("/login")
async def login(request: Request, svc: Svc, api_key: Annotated[str, Form()] = "") -> Response:
    if not api_key.strip() or await svc.keys.verify(api_key) is None:
        return render(request, "login.html", {"error": "Unknown or revoked key."}, 401)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE,
        api_key.strip(),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout() -> Response:
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response


# ---------------------------------------------------------------- reading


@router.get("")
async def agents(request: Request, svc: Svc) -> Response:
    key = await key_for(request, svc, None, write=False)
    found = [await svc.memory.store.get_agent(a) for a in key.agent_ids]
    return render(
        request,
        "agents.html",
        {"key": key, "agents": [a for a in found if a is not None], "ids": key.agent_ids},
    )


@router.get("/agents/{agent_id}")
async def agent(
    request: Request,
    agent_id: AgentPath,
    svc: Svc,
    user_id: OptId = None,
    session_id: OptId = None,
    q: Annotated[str, Query(max_length=QUERY_CHARS)] = "",
    notice: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,  # links of earlier builds
    cursor: Annotated[str | None, Query(max_length=1024)] = None,  # the facts' page (FactPage)
) -> Response:
    key = await key_for(request, svc, agent_id, write=False)
    if session_id is not None:
        # Another agent's session is answered as an unknown one, as the API does
        # (serve.auth.foreign_session): the page must not tell that it exists.
        session = await svc.memory.store.get_session(session_id)
        if session is None or foreign_session(key.agent_ids, session):
            context = {"message": f"No session {session_id} for this key.", "key": key}
            return render(request, "error.html", context, 404)
    try:
        view = await agent_view(
            svc, key.agent_ids, agent_id, user_id, session_id, q, offset, cursor
        )
    except StoreUnavailableError:
        raise  # no unknown agent: the page's 503 (PageRoute)
    except MnemosError as e:
        return render(request, "error.html", {"message": str(e), "key": key}, 404)
    context = {"v": view, "key": key, "notice": NOTICES.get(notice or "")}
    return render(request, "agent.html", context)


@router.get("/agents/{agent_id}/facts/{fact_id}")
async def fact(
    request: Request, agent_id: AgentPath, fact_id: str, svc: Svc, notice: str | None = None
) -> Response:
    key = await key_for(request, svc, agent_id, write=False)
    found = await svc.memory.store.get_facts([fact_id])
    if not found or found[0].agent_id != agent_id:
        return render(request, "error.html", {"message": f"No fact {fact_id}.", "key": key}, 404)
    f = found[0]
    context = {
        **await fact_view(svc, f, key.agent_ids),
        "key": key,
        "notice": NOTICES.get(notice or ""),
    }
    return render(request, "fact.html", context)


# ---------------------------------------------------------------- writing


@router.post("/agents/{agent_id}/facts/{fact_id}/edit")
async def edit_fact(
    request: Request,
    agent_id: AgentPath,
    fact_id: str,
    svc: Svc,
    content: Annotated[str, Form()] = "",  # empty: the manager's own sentence says so
    expected_version: Annotated[int | None, Form(ge=0)] = None,  # the version the form showed
) -> Response:
    key = await key_for(request, svc, agent_id, write=True)
    url = f"/ui/agents/{agent_id}/facts/{fact_id}"
    try:
        before = await _fact_of(svc, agent_id, fact_id)
        within = FactFilter(agent_id=agent_id, user_id=before.user_id if before else None)
        after = await svc.manager.edit_fact(
            fact_id, content, within=within, expected_version=expected_version
        )
    except MnemosError as e:
        if isinstance(e, ConflictError) and expected_version is not None:
            now = await _fact_of(svc, agent_id, fact_id)
            if now is not None and now.invalidated_at is None and now.version != expected_version:
                return _changed(request, key, e, "Not saved", url, now.content, content)
        return refused(request, key, e, "Not saved", url)
    same = before is not None and after.version == before.version  # the same text: no version
    return back_to(url, notice="unchanged" if same else "saved")


@router.post("/agents/{agent_id}/facts/{fact_id}/delete")
async def delete_fact(request: Request, agent_id: AgentPath, fact_id: str, svc: Svc) -> Response:
    key = await key_for(request, svc, agent_id, write=True)
    url = f"/ui/agents/{agent_id}/facts/{fact_id}"
    try:
        found = await _fact_of(svc, agent_id, fact_id)
        owner = found.user_id if found else None
        await svc.manager.delete_fact(fact_id, within=FactFilter(agent_id=agent_id, user_id=owner))
    except MnemosError as e:
        return refused(request, key, e, "Not deleted", url)
    return back_to(url, notice="deleted")


def _changed(
    request: Request, key: ApiKey, e: MnemosError, what: str, back: str, now: str, yours: str
) -> Response:
    """A save of a text changed since the page showed it: the refusal, with the text stored now
    (which the person has not seen) and their own (not lost: they may paste it again)."""
    message = f"{what}: {e}. It now reads “{now}”. Your text was “{yours}”."
    context = {"message": message, "key": key, "back": back}
    return render(request, "error.html", context, status_of(e) or 409)


async def _fact_of(svc: Svc, agent_id: str, fact_id: str) -> Fact | None:
    found = await svc.memory.store.get_facts([fact_id])
    return found[0] if found and found[0].agent_id == agent_id else None


@router.post("/agents/{agent_id}/reflections/{reflection_id}/{action}")
async def reflection(
    request: Request,
    agent_id: AgentPath,
    reflection_id: str,
    action: str,
    svc: Svc,
    content: Annotated[str, Form()] = "",
    expected_content: Annotated[str | None, Form()] = None,
    page_user_id: FormId = None,
    page_session_id: FormId = None,
) -> Response:
    """``expected_content``: the text the page showed, which an edit replaces (a reflection has
    no version); ``page_user_id``, ``page_session_id``: the user and session the page showed, to
    go back to (without them: the reflection's own)."""
    key = await key_for(request, svc, agent_id, write=True)
    found = await own_reflection(svc.memory.store, key.agent_ids, agent_id, reflection_id)
    if found is None or action not in ("edit", "delete"):
        context = {"message": f"No reflection {reflection_id}.", "key": key}
        return render(request, "error.html", context, 404)
    scope = found.scope_key
    page = (page_user_id, page_session_id)
    user_id, session_id = page if any(page) else (scope.user_id, scope.session_id)
    back = f"/ui/agents/{agent_id}"
    try:
        if action == "edit":
            await svc.manager.edit_reflection(
                scope, reflection_id, content, expected_content=expected_content
            )
        else:
            await svc.manager.delete_reflection(scope, reflection_id)
    except MnemosError as e:
        there = url_of(back, user_id=user_id, session_id=session_id)
        if isinstance(e, ConflictError) and action == "edit" and expected_content is not None:
            now = await svc.memory.store.get_reflection(reflection_id)
            if now is not None and now.content.split() != expected_content.split():
                return _changed(request, key, e, "Not saved", there, now.content, content)
        return refused(request, key, e, "Not done", there)
    done = "reflection-saved" if action == "edit" else "reflection-deleted"
    return back_to(back, user_id=user_id, session_id=session_id, notice=done)


@router.post("/agents/{agent_id}/consolidated")
async def consolidated(
    request: Request,
    agent_id: AgentPath,
    svc: Svc,
    scope: Annotated[Scope, Form()],
    expected_version: Annotated[int, Form(ge=0)],
    content: Annotated[str, Form()] = "",  # empty: the manager's own sentence says so
    user_id: FormId = None,
    session_id: FormId = None,
    page_user_id: FormId = None,
    page_session_id: FormId = None,
) -> Response:
    """``user_id``, ``session_id``: the scope's; ``page_…``: the page's, to go back to."""
    api_key = await key_for(request, svc, agent_id, write=True)
    page = (page_user_id, page_session_id)
    back_user, back_session = page if any(page) else (user_id, session_id)
    back = f"/ui/agents/{agent_id}"
    try:
        try:
            key = ScopeKey(scope=scope, agent_id=agent_id, user_id=user_id, session_id=session_id)
        except ValueError:
            raise InvalidInputError(f"the {scope} memory needs its own user or session") from None
        refusal = await session_refusal(svc.memory.store, api_key.agent_ids, key.session_id)
        if refusal is not None:  # a session holding an agent the key is not for: unknown
            raise NotFoundError(refusal)
        saved = await svc.manager.edit_consolidated(key, content, expected_version=expected_version)
    except MnemosError as e:
        there = url_of(back, user_id=back_user, session_id=back_session)
        return refused(request, api_key, e, "Not saved", there)
    notice = "unchanged" if saved.version == expected_version else f"{scope}-memory-saved"
    return back_to(back, user_id=back_user, session_id=back_session, notice=notice)


@router.get("/{unknown:path}")
async def unknown_page(request: Request, unknown: str) -> Response:
    """A page the memory page does not have: its own 404 page, not the API's JSON problem."""
    return render(request, "error.html", {"message": "There is no such page."}, 404)
