"""What a memory-page request must pass, and what an invalid one is told: a write comes from the
page's own origin (SameSite=Strict alone lets a page on another port of the same host post with
the sign-in cookie), and a validation error is said in the page's words, never repeating the
input (a link could make it say anything on the page)."""

from __future__ import annotations

from urllib.parse import urlsplit

from fastapi import Request
from fastapi.exceptions import RequestValidationError

_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None] | None:
    """scheme, host and port of a URL (the default port made explicit); None for "null" or junk."""
    try:
        parts = urlsplit(url)
        port = parts.port or _PORTS.get(parts.scheme.lower())
    except ValueError:
        return None
    if not parts.scheme or not parts.hostname:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port


def same_origin(request: Request) -> bool:
    """Whether a write comes from this origin (scheme, host and port), as the browser tells.

    ``Sec-Fetch-Site`` first (every current browser sends it, and a page cannot set it): only
    ``same-origin`` passes; ``same-site`` is the attack SameSite lets through (another port of the
    same host). Without it, ``Origin``, else ``Referer``, must be this request's own origin
    ("null" is refused).

    A request with none of the three is let through, a choice: it is no current browser's
    (Chromium sends ``Origin`` on every POST, and Chromium, Firefox and Safari have sent
    ``Sec-Fetch-Site`` since 2019-2023), so it comes from curl or a script, which carries no
    victim's cookie, only the key its sender holds already. What stays open is a browser old
    enough to send neither header on a form POST, from a page that also suppresses its
    ``Referer``. Behind a proxy, the origin compared is the one the app sees: the Host the proxy
    forwards, and http (uvicorn trusts X-Forwarded-Proto only from 127.0.0.1), so behind a TLS
    proxy a browser that sends no ``Sec-Fetch-Site`` (an old one) is refused; current browsers
    send it, and it needs neither."""
    site = request.headers.get("sec-fetch-site")
    if site is not None:
        return site == "same-origin"
    for header in ("origin", "referer"):
        value = request.headers.get(header)
        if value is not None:
            return _origin(value) == _origin(str(request.url))
    return True


def invalid_input(exc: RequestValidationError) -> str:
    """A validation error as one sentence per field, in the page's words."""
    labels = {
        "agent_id": "agent id",
        "user_id": "user id",
        "session_id": "session id",
        "page_user_id": "user id",
        "page_session_id": "session id",
        "q": "search",
        "content": "text",
        "api_key": "API key",
        "expected_version": "version",
    }
    said: list[str] = []
    for error in exc.errors():
        loc = error.get("loc") or ("input",)
        name = str(loc[-1])
        label = labels.get(name, name.replace("_", " "))
        kind = str(error.get("type", ""))
        # The input itself is not repeated: a link could make it say anything on the page.
        if kind == "missing":
            sentence = f"The {label} is missing."
        elif kind == "string_pattern_mismatch":
            sentence = (
                f"The {label} is not a valid id: up to 128 letters, digits, “.”, “_” or “-”, "
                "starting with a letter or digit."
            )
        elif kind == "string_too_long":
            limit = (error.get("ctx") or {}).get("max_length")
            sentence = f"The {label} is too long" + (
                f": at most {limit} characters." if limit else "."
            )
        else:
            sentence = f"The {label} is not valid: {error.get('msg', 'invalid')}."
        if sentence not in said:
            said.append(sentence)
    return " ".join(said) or "The request is not valid."
