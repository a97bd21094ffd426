"""One line for an operator, never a traceback: how every ``mnemos`` command ends on an expected
failure. The rule lives here, below both cli/ (most commands) and serve/ (``serve``, ``keys``,
``mcp``), since serve may not import cli (tests/test_layers.py)."""

from __future__ import annotations

import asyncio
import gc
import json
import re
from collections.abc import Coroutine
from typing import Any, NoReturn
from urllib.parse import urlsplit

import typer
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from memory.errors import MnemosError
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
# A quoted token of a driver's message: where it quotes what it could not parse.
_QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'")


def _credentials(settings: Settings) -> list[str]:
    """The passwords of the store's DSN and URI, and their pieces around an "@" or a space: a
    driver quotes the token it could not parse ('invalid percent-encoded token: "S3cr%t-pw"',
    'failed to resolve host "ssWORD9@db"'), which the URI pattern redact_text knows misses."""
    found: set[str] = set()
    for secret in (settings.store.postgres_dsn, settings.store.mongodb_uri):
        dsn = secret.get_secret_value() if secret else ""
        try:
            password = urlsplit(dsn).password if "://" in dsn else None
        except ValueError:  # a URI that does not even split
            password = None
        keyword = _KEYWORD_PASSWORD.search(dsn) if "://" not in dsn else None
        for value in (password, keyword.group(1).strip("'") if keyword else None):
            if value:
                found |= {value, *(p for p in re.split(r"[@\s]+", value) if len(p) >= 3)}
    return sorted(found, key=len, reverse=True)


def _without_credentials(message: str, settings: Settings) -> str:
    """``message`` with the store's passwords redacted where a driver quotes them: only inside
    quotes, so a password that is a common word ("postgres", "mnemos") neither garbles the rest
    of the line nor gives itself away by what it took out of it."""
    passwords = _credentials(settings)

    def redacted(quoted: re.Match[str]) -> str:
        text = quoted.group(0)
        for password in passwords:
            text = text.replace(password, "[redacted]")
        return text

    return _QUOTED.sub(redacted, message) if passwords else message


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
