"""One line for an operator, never a traceback: how every ``mnemos`` command ends on an expected
failure. The rule lives here, below both cli/ (most commands) and serve/ (``serve``, ``keys``,
``mcp``), since serve may not import cli (tests/test_layers.py)."""

from __future__ import annotations

import asyncio
import gc
import json
import re
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, NoReturn
from urllib.parse import unquote

import typer
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from memory.errors import MnemosError, StoreUnavailableError
from memory.logging import redact_text
from memory.settings import Settings
from memory.settings_errors import validation_line
from runtime.connection import connect_config

# The modules of the stores' drivers (their exception classes'): errors from them are the store's.
_STORE_DRIVERS = frozenset({"psycopg", "psycopg_pool", "pymongo", "bson", "sqlite3"})


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr and a non-zero exit: what an operator reads, never a traceback, never
    a credential it quotes (a DSN in a driver's message)."""
    typer.echo(f"error: {redact_text(message)}", err=True)
    raise typer.Exit(code)


def _causes(err: BaseException | None) -> str:
    """ "activity error: the provider said no" from a chain of failures, innermost last."""
    parts: list[str] = []
    while err is not None:
        parts.append(str(err))
        err = err.__cause__
    return ": ".join(parts)


def error_line(err: BaseException, settings: Settings) -> str | None:
    """The line an operator reads for an expected failure; None for a bug (keep its traceback)."""
    match err:
        case ValidationError():
            return f"invalid input: {validation_line(err)}"
        case StoreUnavailableError() if err.__cause__ is not None:
            # The caller of the API is told no more than that; the operator is told why.
            cause = " ".join(str(err.__cause__).split())
            return f"store ({settings.store.backend}) cannot be reached: {cause}"
        case MnemosError():
            return str(err)
        case RPCError():
            return f"Temporal: {err.message}"
        case WorkflowFailureError():
            return f"the run failed: {_causes(err.cause)} (its history is in the Temporal UI)"
        case OSError() | json.JSONDecodeError():
            return str(err)
        case _ if type(err).__module__.partition(".")[0] in _STORE_DRIVERS:
            # A DSN or URI that does not parse, a server that refuses: the operator's to mend.
            return f"store ({settings.store.backend}): {' '.join(str(err).split())}"
        case RuntimeError() if str(err).startswith("Failed client connect"):
            return (
                f"cannot connect to Temporal at {_target(settings)}: is it running? "
                "(`mnemos up` starts a local one; MNEMOS_TEMPORAL__ADDRESS or TEMPORAL_ADDRESS "
                "points elsewhere)"
            )
    return None


def _target(settings: Settings) -> str:
    """The address a command connected to: the settings' under Temporal's environment config."""
    try:
        return connect_config(settings.temporal).get("target_host", settings.temporal.address)
    except MnemosError:
        return settings.temporal.address


# The value of a keyword DSN's password, up to the next "key=" (a value with a space in it).
_KEYWORD_PASSWORD = re.compile(r"\bpassword\s*=\s*(.*?)(?=\s+\w+\s*=|$)")
# A keyword DSN's user, host and database name: what a driver's message prints as no secret.
_KEYWORD_NAME = re.compile(r"\b(?:user|host|hostaddr|dbname)\s*=\s*('[^']*'|\S+)")
# A URI DSN's password as a query keyword (libpq's "?password=", percent-encoded like the rest).
_QUERY_PASSWORD = re.compile(r"[?&]password=([^&]*)")
_QUERY_NAME = re.compile(r"[?&](?:user|host|hostaddr|dbname)=([^&]*)")
# A quoted token of a driver's message: where it quotes what it could not parse.
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")
# Shorter pieces of a password are dropped, and a shorter password is redacted only inside quotes:
# one or two letters replaced anywhere would garble every line.
_MIN_SECRET = 3


@dataclass(frozen=True)
class _Secrets:
    """What to take out of an error line for one DSN, longest first."""

    anywhere: tuple[str, ...]  # the whole password, and what cannot be a common word
    quoted: tuple[str, ...]  # pieces of it that may be words: only where a driver quotes them
    names: frozenset[str]  # the DSN's user, host and database name, printed as no secrets


def _uri_parts(dsn: str) -> tuple[list[str], set[str]]:
    """A URI's passwords (its user info's, its "?password="'s) and names, raw and decoded. By
    hand, not urlsplit: a password with "#", "?" or "[" breaks it (no password, or ValueError).
    The user info ends at the last "@" before the path, so a password may hold an "@"."""
    rest = dsn.partition("://")[2]
    authority, _, path = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    user, _, password = userinfo.partition(":")
    passwords = [password, *_QUERY_PASSWORD.findall(rest)] if at else _QUERY_PASSWORD.findall(rest)
    names = {user, path.partition("?")[0], *_QUERY_NAME.findall(rest)}
    names |= {_without_port(host) for host in hosts.split(",")}
    return _decoded(passwords), set(_decoded(list(names)))


def _without_port(host: str) -> str:
    """The host of "db:5432" ("db") or of "[::1]:5432" ("::1")."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.partition(":")[0]


def _decoded(values: list[str]) -> list[str]:
    """Each value as written and percent-decoded: a driver may print either."""
    return [form for value in values for form in {value, unquote(value)}]


def _keyword_parts(dsn: str) -> tuple[list[str], set[str]]:
    """A keyword DSN's password and names ("host=db password=my secret99 dbname=mnemos")."""
    keyword = _KEYWORD_PASSWORD.search(dsn)
    passwords = [keyword.group(1).strip("'")] if keyword else []
    return passwords, {name.strip("'") for name in _KEYWORD_NAME.findall(dsn)}


def _secrets(dsn: str) -> _Secrets:
    """The password(s) of one DSN or URI, and their pieces around an "@" or a space: a driver
    quotes the token it could not parse ('invalid percent-encoded token: "S3cr%t-pw"', 'failed
    to resolve host "ssWORD9@db"'), which the URI pattern redact_text knows misses.

    A password equal to the DSN's own user, host or database name ("postgres:postgres") is no
    secret: the driver prints that name anyway ('for user "postgres"'), and redacting it would
    garble the line and give the password away by what it took out."""
    passwords, names = _uri_parts(dsn) if "://" in dsn else _keyword_parts(dsn)
    pieces = {p for pw in passwords for p in re.split(r"[@\s]+", pw) if len(p) >= _MIN_SECRET}
    wholes = {pw for pw in passwords if pw} - names
    anywhere = {pw for pw in wholes if len(pw) >= _MIN_SECRET}
    # A piece with a quote in it is no common word, and the driver's quotes split at its quote.
    anywhere |= {piece for piece in pieces if '"' in piece or "'" in piece} - names
    quoted = (wholes | pieces) - names - anywhere
    return _Secrets(_longest_first(anywhere), _longest_first(quoted), frozenset(names))


def _longest_first(values: set[str]) -> tuple[str, ...]:
    return tuple(sorted(values, key=len, reverse=True))


def _redacted(message: str, secrets: _Secrets) -> str:
    """``message`` with one DSN's password replaced anywhere (a garbled line beats a leaked
    secret: a password that is a common word may take a word out), its pieces inside quotes."""
    for secret in secrets.anywhere:
        message = message.replace(secret, "[redacted]")

    def in_quotes(quoted: re.Match[str]) -> str:
        text = quoted.group(0)
        if text[1:-1] in secrets.names:  # 'database "mnemos"': a name, printed as no secret
            return text
        for secret in secrets.quoted:
            text = text.replace(secret, "[redacted]")
        return text

    return _QUOTED.sub(in_quotes, message) if secrets.quoted else message


def _without_credentials(message: str, settings: Settings) -> str:
    """``message`` without the store's passwords: the DSN's and the URI's."""
    for secret in (settings.store.postgres_dsn, settings.store.mongodb_uri):
        if secret is not None and secret.get_secret_value():
            message = _redacted(message, _secrets(secret.get_secret_value()))
    return message


def run[T](coro: Coroutine[Any, Any, T], settings: Settings) -> T:
    """Run a command's coroutine; expected failures become one line on stderr and exit code 1."""
    try:
        return asyncio.run(coro)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        message, code = "interrupted", 130
    except Exception as err:
        found = error_line(err, settings)
        if found is None:
            raise
        message, code = _without_credentials(found, settings), 1
    finally:
        # Free the Temporal clients (and an exception's traceback holding one) now, on this
        # thread: freed during interpreter shutdown instead, the SDK's native client crashes the
        # process (SIGSEGV, exit code 139) in about one run in twenty, one in six after a failed
        # connect.
        gc.collect()
    fail(message, code)
