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

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from pydantic import BeforeValidator, StringConstraints
from starlette.exceptions import HTTPException

from client.management import MAX_OFFSET
from memory.errors import ConflictError, InvalidInputError, MnemosError, StoreUnavailableError
from memory.models import Fact, FactFilter, ScopeKey
from memory.settings import Scope
from serve.auth import ID_PATTERN, AgentPath, Svc, foreign_session, token_of
from serve.errors import log, status_of
from serve.keys import ApiKey
from serve.limits import MAX_BODY_BYTES
from serve.page_guard import invalid_input, same_origin
from serve.page_sources import fact_view, utc_time
from serve.page_view import agent_view

COOKIE = "mnemos_key"
templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
templates.env.filters["utc"] = utc_time  # every time the page shows names its zone


def _given(value: object) -> object:
    """An empty box is a box not filled in: the "Open" form sends both of its boxes."""
    return None if isinstance(value, str) and not value.strip() else value


_Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
OptId = Annotated[_Id | None, BeforeValidator(_given), Query()]
FormId = Annotated[_Id | None, BeforeValidator(_given), Form()]
QUERY_CHARS = 2000
READ_ONLY = "This key is read-only: it cannot change memory."

# What a write may say after its redirect: a code in the URL, shown as one of these sentences (a
# link from elsewhere can name a code, never put its own words on the page). Unknown: nothing.
NOTICES = {
    "saved": "Saved as a new version.",
    "unchanged": "No change: the text is the same.",
    "deleted": "Deleted.",
    "reflection-saved": "Reflection saved.",
    "reflection-deleted": "Reflection deleted.",
    "agent-memory-saved": "Agent memory saved.",
    "user-memory-saved": "User memory saved.",
    "session-memory-saved": "Session memory saved.",
}


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
# may frame it. Nothing of it is stored by the browser: after "Sign out", Back must not show
# the memory it showed.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


# The form reader's refusals (HTTPExceptions), in the page's words as its every error is.
_UNREAD = {
    400: "Not sent: the form could not be read (a box holds at most 1 MiB of text).",
    413: f"Not sent: the form is larger than the server takes ({MAX_BODY_BYTES // 2**20} MiB).",
}


def _outage(request: Request, e: StoreUnavailableError) -> Response:
    """The store out of reach, as the API answers it (a 503, logged with its driver's text) but
    on the page's own page: its sentence ("...; retry later") capitalised and ended."""
    log.warning("store unavailable", path=request.url.path, error=str(e.__cause__ or e))
    said = str(e)
    return _page(request, "error.html", {"message": said[:1].upper() + said[1:] + "."}, 503)


class _PageRoute(APIRoute):
    """Every page route: writes from another origin refused before their form is read, invalid
    input answered as a page, and the page's headers on every answer (redirects too)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            if request.method not in ("GET", "HEAD") and not same_origin(request):
                message = (
                    "Refused: this form was not sent from this page's own address. "
                    "Open the page again and retry."
                )
                response = _page(request, "error.html", {"message": message}, 403)
            else:
                try:
                    response = await handler(request)
                except RequestValidationError as e:
                    response = _page(request, "error.html", {"message": invalid_input(e)}, 422)
                except Denied as e:
                    response = e.response
                except HTTPException as e:
                    # Raised while the form is read (a box over the parser's 1 MiB, a body past
                    # serve/limits.py's bound as it streams): still the page's own error page.
                    # Any other is no reading of a form, and says so itself.
                    if e.status_code not in _UNREAD:
                        raise
                    message = _UNREAD[e.status_code]
                    response = _page(request, "error.html", {"message": message}, e.status_code)
                except StoreUnavailableError as e:
                    response = _outage(request, e)
            response.headers.update(_HEADERS)
            return response

        return page_handler


router = APIRouter(prefix="/ui", include_in_schema=False, route_class=_PageRoute)


def _page(request: Request, name: str, context: dict[str, object], code: int = 200) -> Response:
    key = context.get("key")
    if isinstance(key, ApiKey) and key.read_only:
        context = {**context, "locked": READ_ONLY}  # its Save and Delete buttons disabled
    page = templates.TemplateResponse(request, name, context, status_code=code)
    page.headers.update(_HEADERS)
    return page


def _refused(request: Request, key: ApiKey, e: MnemosError, what: str, back: str) -> Response:
    """A write the memory refused: its reason on the error page, with the way back."""
    context = {"message": f"{what}: {e}", "key": key, "back": back}
    return _page(request, "error.html", context, status_of(e) or 400)


async def _key(request: Request, svc: Svc, agent_id: str | None, *, write: bool) -> ApiKey:
    # The sign-in cookie, or a key in a header as the API takes it (a script reading the page).
    token = token_of(request) or request.cookies.get(COOKIE) or None
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


def _url(path: str, **params: str | None) -> str:
    query = urlencode({k: v for k, v in params.items() if v})
    return f"{path}?{query}" if query else path


def _back(path: str, **params: str | None) -> RedirectResponse:
    assert params.get("notice") in NOTICES
    return RedirectResponse(_url(path, **params), status_code=303)


# ---------------------------------------------------------------- sign-in


@router.get("/login")
async def login_form(request: Request) -> Response:
    return _page(request, "login.html", {})


@router.post("/login")
async def login(request: Request, svc: Svc, api_key: Annotated[str, Form()] = "") -> Response:
    if not api_key.strip() or await svc.keys.verify(api_key) is None:
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
    q: Annotated[str, Query(max_length=QUERY_CHARS)] = "",
    notice: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,  # links of earlier builds
    cursor: Annotated[str | None, Query(max_length=1024)] = None,  # the facts' page (FactPage)
) -> Response:
    key = await _key(request, svc, agent_id, write=False)
    if session_id is not None:
        # Another agent's session is answered as an unknown one, as the API does
        # (serve.auth.foreign_session): the page must not tell that it exists.
        session = await svc.memory.store.get_session(session_id)
        if session is None or foreign_session(key.agent_ids, session):
            context = {"message": f"No session {session_id} for this key.", "key": key}
            return _page(request, "error.html", context, 404)
    try:
        view = await agent_view(svc, agent_id, user_id, session_id, q, offset, cursor)
    except StoreUnavailableError:
        raise  # no unknown agent: the page's 503 (_PageRoute)
    except MnemosError as e:
        return _page(request, "error.html", {"message": str(e), "key": key}, 404)
    context = {"v": view, "key": key, "notice": NOTICES.get(notice or "")}
    return _page(request, "agent.html", context)


@router.get("/agents/{agent_id}/facts/{fact_id}")
async def fact(
    request: Request, agent_id: AgentPath, fact_id: str, svc: Svc, notice: str | None = None
) -> Response:
    key = await _key(request, svc, agent_id, write=False)
    found = await svc.memory.store.get_facts([fact_id])
    if not found or found[0].agent_id != agent_id:
        return _page(request, "error.html", {"message": f"No fact {fact_id}.", "key": key}, 404)
    f = found[0]
    context = {
        **await fact_view(svc, f),
        "key": key,
        "notice": NOTICES.get(notice or ""),
    }
    return _page(request, "fact.html", context)


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
    key = await _key(request, svc, agent_id, write=True)
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
        return _refused(request, key, e, "Not saved", url)
    same = before is not None and after.version == before.version  # the same text: no version
    return _back(url, notice="unchanged" if same else "saved")


@router.post("/agents/{agent_id}/facts/{fact_id}/delete")
async def delete_fact(request: Request, agent_id: AgentPath, fact_id: str, svc: Svc) -> Response:
    key = await _key(request, svc, agent_id, write=True)
    url = f"/ui/agents/{agent_id}/facts/{fact_id}"
    try:
        found = await _fact_of(svc, agent_id, fact_id)
        owner = found.user_id if found else None
        await svc.manager.delete_fact(fact_id, within=FactFilter(agent_id=agent_id, user_id=owner))
    except MnemosError as e:
        return _refused(request, key, e, "Not deleted", url)
    return _back(url, notice="deleted")


def _changed(
    request: Request, key: ApiKey, e: MnemosError, what: str, back: str, now: str, yours: str
) -> Response:
    """A save of a text changed since the page showed it: the refusal, with the text stored now
    (which the person has not seen) and their own (not lost: they may paste it again)."""
    message = f"{what}: {e}. It now reads “{now}”. Your text was “{yours}”."
    context = {"message": message, "key": key, "back": back}
    return _page(request, "error.html", context, status_of(e) or 409)


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
    key = await _key(request, svc, agent_id, write=True)
    found = await svc.memory.store.get_reflection(reflection_id)
    if found is None or found.scope_key.agent_id != agent_id or action not in ("edit", "delete"):
        context = {"message": f"No reflection {reflection_id}.", "key": key}
        return _page(request, "error.html", context, 404)
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
        there = _url(back, user_id=user_id, session_id=session_id)
        if isinstance(e, ConflictError) and action == "edit" and expected_content is not None:
            now = await svc.memory.store.get_reflection(reflection_id)
            if now is not None and now.content.split() != expected_content.split():
                return _changed(request, key, e, "Not saved", there, now.content, content)
        return _refused(request, key, e, "Not done", there)
    done = "reflection-saved" if action == "edit" else "reflection-deleted"
    return _back(back, user_id=user_id, session_id=session_id, notice=done)


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
    api_key = await _key(request, svc, agent_id, write=True)
    page = (page_user_id, page_session_id)
    back_user, back_session = page if any(page) else (user_id, session_id)
    back = f"/ui/agents/{agent_id}"
    try:
        try:
            key = ScopeKey(scope=scope, agent_id=agent_id, user_id=user_id, session_id=session_id)
        except ValueError:
            raise InvalidInputError(f"the {scope} memory needs its own user or session") from None
        saved = await svc.manager.edit_consolidated(key, content, expected_version=expected_version)
    except MnemosError as e:
        there = _url(back, user_id=back_user, session_id=back_session)
        return _refused(request, api_key, e, "Not saved", there)
    notice = "unchanged" if saved.version == expected_version else f"{scope}-memory-saved"
    return _back(back, user_id=back_user, session_id=back_session, notice=notice)


@router.get("/{unknown:path}")
async def unknown_page(request: Request, unknown: str) -> Response:
    """A page the memory page does not have: its own 404 page, not the API's JSON problem."""
    return _page(request, "error.html", {"message": "There is no such page."}, 404)
