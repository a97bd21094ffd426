"""The memory page: server-rendered HTML and plain forms over the same services as the API.

Sign-in stores the API key in an HttpOnly, SameSite=Strict cookie, so forms from other sites
cannot act with it; every page checks the key against the agent in its path, as the API does,
and draws on the key's read or write budget, the same as the API's (serve/rate_limit.py).
Writes answer with a redirect (post/redirect/get) carrying a short notice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from memory.errors import MnemosError
from memory.models import FactFilter, ScopeKey
from memory.settings import Scope
from serve.auth import COOKIE, ID_PATTERN, AgentPath, Svc, token_of
from serve.keys import ApiKey
from serve.page_view import agent_view

router = APIRouter(prefix="/ui", include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
OptId = Annotated[str | None, Query(pattern=ID_PATTERN)]
FormId = Annotated[str | None, Form(pattern=ID_PATTERN)]
NOTICE_CHARS = 500
Notice = Annotated[str | None, Query(max_length=NOTICE_CHARS)]


class Denied(Exception):
    """No key (sign in) or the wrong one (403): the page to show instead."""

    def __init__(self, response: Response) -> None:
        self.response = response


async def _denied(_: Request, exc: Exception) -> Response:
    assert isinstance(exc, Denied)
    return exc.response


def install(app: FastAPI) -> None:
    app.add_exception_handler(Denied, _denied)


# The page is its own HTML, one stylesheet and forms to itself: nothing else may load or run in
# it (what a user said is escaped; this holds if an escape is ever missed), and no other site
# may frame it.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def _page(request: Request, name: str, context: dict[str, object], code: int = 200) -> Response:
    page = templates.TemplateResponse(request, name, context, status_code=code)
    page.headers.update(_HEADERS)
    return page


async def _key(request: Request, svc: Svc, agent_id: str | None, *, write: bool) -> ApiKey:
    token = token_of(request)
    key = await svc.keys.verify(token) if token else None
    if key is None:
        raise Denied(RedirectResponse("/ui/login", status_code=303))
    refusal = svc.limiter.take(key.key_id, "write" if write else "read")
    if refusal is not None:
        page = _page(request, "error.html", {"message": refusal.detail.capitalize() + "."}, 429)
        page.headers.update(refusal.headers())
        raise Denied(page)
    if agent_id is not None and not key.allows(agent_id, write=write):
        why = "read-only" if agent_id in key.agent_ids else f"not for agent {agent_id}"
        raise Denied(_page(request, "error.html", {"message": f"This key is {why}."}, 403))
    return key


def _back(url: str, **params: str | None) -> RedirectResponse:
    if (notice := params.get("notice")) and len(notice) > NOTICE_CHARS:
        # An error that echoes a long input: the page it goes back to must still take it.
        params["notice"] = notice[: NOTICE_CHARS - 1] + "…"
    query = urlencode({k: v for k, v in params.items() if v})
    return RedirectResponse(f"{url}?{query}" if query else url, status_code=303)


# ---------------------------------------------------------------- sign-in


@router.get("/login")
async def login_form(request: Request, error: Notice = None) -> Response:
    return _page(request, "login.html", {"error": error})


@router.post("/login")
async def login(request: Request, svc: Svc, api_key: Annotated[str, Form()]) -> Response:
    if await svc.keys.verify(api_key) is None:
        return _page(request, "login.html", {"error": "Unknown or revoked key."}, 401)
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
    key = await _key(request, svc, None, write=False)
    found = [await svc.memory.store.get_agent(a) for a in key.agent_ids]
    return _page(
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
    q: Annotated[str, Query(max_length=2000)] = "",
    notice: Notice = None,
) -> Response:
    key = await _key(request, svc, agent_id, write=False)
    try:
        view = await agent_view(svc, agent_id, user_id, session_id, q)
    except MnemosError as e:
        return _page(request, "error.html", {"message": str(e), "agent_id": agent_id}, 404)
    return _page(request, "agent.html", {"v": view, "key": key, "notice": notice})


@router.get("/agents/{agent_id}/facts/{fact_id}")
async def fact(
    request: Request, agent_id: AgentPath, fact_id: str, svc: Svc, notice: Notice = None
) -> Response:
    key = await _key(request, svc, agent_id, write=False)
    found = await svc.memory.store.get_facts([fact_id])
    if not found or found[0].agent_id != agent_id:
        return _page(request, "error.html", {"message": f"No fact {fact_id}."}, 404)
    f = found[0]
    sources = []  # the messages it was formed from, in the session it was formed in
    if f.source_session_id and f.source_message_ids:
        sources = await svc.memory.store.get_messages(f.source_session_id, f.source_message_ids)
    context = {"f": f, "sources": sources, "key": key, "notice": notice}
    return _page(request, "fact.html", context)


# ---------------------------------------------------------------- writing


@router.post("/agents/{agent_id}/facts/{fact_id}/edit")
async def edit_fact(
    request: Request,
    agent_id: AgentPath,
    fact_id: str,
    svc: Svc,
    content: Annotated[str, Form()],
) -> Response:
    await _key(request, svc, agent_id, write=True)
    url = f"/ui/agents/{agent_id}/facts/{fact_id}"
    try:
        owner = await _fact_owner(svc, agent_id, fact_id)
        within = FactFilter(agent_id=agent_id, user_id=owner)
        await svc.manager.edit_fact(fact_id, content, within=within)
    except MnemosError as e:
        return _back(url, notice=f"Not saved: {e}")
    return _back(url, notice="Saved as a new version.")


@router.post("/agents/{agent_id}/facts/{fact_id}/delete")
async def delete_fact(request: Request, agent_id: AgentPath, fact_id: str, svc: Svc) -> Response:
    await _key(request, svc, agent_id, write=True)
    try:
        owner = await _fact_owner(svc, agent_id, fact_id)
        await svc.manager.delete_fact(fact_id, within=FactFilter(agent_id=agent_id, user_id=owner))
    except MnemosError as e:
        return _back(f"/ui/agents/{agent_id}/facts/{fact_id}", notice=f"Not deleted: {e}")
    return _back(f"/ui/agents/{agent_id}/facts/{fact_id}", notice="Deleted.")


async def _fact_owner(svc: Svc, agent_id: str, fact_id: str) -> str | None:
    found = await svc.memory.store.get_facts([fact_id])
    return found[0].user_id if found and found[0].agent_id == agent_id else None


@router.post("/agents/{agent_id}/reflections/{reflection_id}/{action}")
async def reflection(
    request: Request,
    agent_id: AgentPath,
    reflection_id: str,
    action: str,
    svc: Svc,
    content: Annotated[str, Form()] = "",
) -> Response:
    await _key(request, svc, agent_id, write=True)
    found = await svc.memory.store.get_reflection(reflection_id)
    if found is None or found.scope_key.agent_id != agent_id or action not in ("edit", "delete"):
        return _page(request, "error.html", {"message": f"No reflection {reflection_id}."}, 404)
    key = found.scope_key
    back = f"/ui/agents/{agent_id}"
    try:
        if action == "edit":
            await svc.manager.edit_reflection(key, reflection_id, content)
        else:
            await svc.manager.delete_reflection(key, reflection_id)
    except MnemosError as e:
        return _back(back, user_id=key.user_id, session_id=key.session_id, notice=f"Not done: {e}")
    done = "Reflection saved." if action == "edit" else "Reflection deleted."
    return _back(back, user_id=key.user_id, session_id=key.session_id, notice=done)


@router.post("/agents/{agent_id}/consolidated")
async def consolidated(
    request: Request,
    agent_id: AgentPath,
    svc: Svc,
    scope: Annotated[Scope, Form()],
    content: Annotated[str, Form()],
    expected_version: Annotated[int, Form(ge=0)],
    user_id: FormId = None,
    session_id: FormId = None,
) -> Response:
    await _key(request, svc, agent_id, write=True)
    back = f"/ui/agents/{agent_id}"
    try:
        key = ScopeKey(scope=scope, agent_id=agent_id, user_id=user_id, session_id=session_id)
        await svc.manager.edit_consolidated(key, content, expected_version=expected_version)
    except (MnemosError, ValueError) as e:
        return _back(back, user_id=user_id, session_id=session_id, notice=f"Not saved: {e}")
    return _back(back, user_id=user_id, session_id=session_id, notice=f"{scope} memory saved.")
