"""What every route of the memory page (serve/page.py) shares: its route class (writes from
another origin refused before their form is read, invalid input and the store out of reach
answered as the page's own error page, its headers on every answer), the sign-in key read and
checked, the templates, and the notices a write may redirect with."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse, Response
from fastapi.routing import APIRoute
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException

from memory.errors import MnemosError, StoreUnavailableError
from serve.auth import Svc, token_of
from serve.errors import log, status_of
from serve.keys import ApiKey
from serve.limits import MAX_BODY_BYTES
from serve.page_guard import invalid_input, same_origin
from serve.page_sources import utc_time

COOKIE = "mnemos_key"
templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
templates.env.filters["utc"] = utc_time  # every time the page shows names its zone
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
    return render(request, "error.html", {"message": said[:1].upper() + said[1:] + "."}, 503)


class PageRoute(APIRoute):
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
                response = render(request, "error.html", {"message": message}, 403)
            else:
                try:
                    response = await handler(request)
                except RequestValidationError as e:
                    response = render(request, "error.html", {"message": invalid_input(e)}, 422)
                except Denied as e:
                    response = e.response
                except HTTPException as e:
                    # Raised while the form is read (a box over the parser's 1 MiB, a body past
                    # serve/limits.py's bound as it streams): still the page's own error page.
                    # Any other is no reading of a form, and says so itself.
                    if e.status_code not in _UNREAD:
                        raise
                    message = _UNREAD[e.status_code]
                    response = render(request, "error.html", {"message": message}, e.status_code)
                except StoreUnavailableError as e:
                    response = _outage(request, e)
            response.headers.update(_HEADERS)
            return response

        return page_handler


def render(request: Request, name: str, context: dict[str, object], code: int = 200) -> Response:
    key = context.get("key")
    if isinstance(key, ApiKey) and key.read_only:
        context = {**context, "locked": READ_ONLY}  # its Save and Delete buttons disabled
    page = templates.TemplateResponse(request, name, context, status_code=code)
    page.headers.update(_HEADERS)
    return page


def refused(request: Request, key: ApiKey, e: MnemosError, what: str, back: str) -> Response:
    """A write the memory refused: its reason on the error page, with the way back."""
    context = {"message": f"{what}: {e}", "key": key, "back": back}
    return render(request, "error.html", context, status_of(e) or 400)


async def key_for(request: Request, svc: Svc, agent_id: str | None, *, write: bool) -> ApiKey:
    # The sign-in cookie, or a key in a header as the API takes it (a script reading the page).
    token = token_of(request) or request.cookies.get(COOKIE) or None
    key = await svc.keys.verify(token) if token else None
    if key is None:
        raise Denied(RedirectResponse("/ui/login", status_code=303))
    refusal = svc.limiter.take(key.key_id, "write" if write else "read")
    if refusal is not None:
        page = render(request, "error.html", {"message": refusal.detail.capitalize() + "."}, 429)
        page.headers.update(refusal.headers())
        raise Denied(page)
    if agent_id is not None and not key.allows(agent_id, write=write):
        why = "read-only" if agent_id in key.agent_ids else f"not for agent {agent_id}"
        raise Denied(render(request, "error.html", {"message": f"This key is {why}."}, 403))
    return key


def url_of(path: str, **params: str | None) -> str:
    query = urlencode({k: v for k, v in params.items() if v})
    return f"{path}?{query}" if query else path


def back_to(path: str, **params: str | None) -> RedirectResponse:
    assert params.get("notice") in NOTICES
    return RedirectResponse(url_of(path, **params), status_code=303)


# ---------------------------------------------------------------- sign-in
