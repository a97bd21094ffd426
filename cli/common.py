"""What every `mnemos` command shares: settings, running a coroutine with one-line errors, output
as text or JSON, progress on stderr, and the store-side lookups of agents and sessions."""

from __future__ import annotations

import asyncio
import gc
import json
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, NoReturn

import typer
from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from rich.console import Console
from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from memory.errors import MnemosError
from memory.logging import configure_logging, redact_text
from memory.lookup import require_agent, require_session
from memory.models import AgentConfig, Id, SessionInfo
from memory.settings import Settings, read_settings
from memory.settings_errors import InvalidSettingsError, validation_line
from memory.store import MemoryStore, open_store
from runtime.connection import connect, connect_config

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]

_ID = TypeAdapter(Id)

# The modules of the stores' drivers (their exception classes'): errors from them are the store's.
_STORE_DRIVERS = frozenset({"psycopg", "psycopg_pool", "pymongo", "bson", "sqlite3"})


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr and a non-zero exit: what an operator reads, never a traceback, never
    a credential it quotes (a DSN in a driver's message)."""
    typer.echo(f"error: {redact_text(message)}", err=True)
    raise typer.Exit(code)


def load_settings() -> Settings:
    """Settings from MNEMOS_* variables, read fresh (a test or a shell may change them)."""
    try:
        settings = read_settings()
    except InvalidSettingsError as e:
        fail(str(e))
    configure_logging("warning" if settings.log_level == "info" else settings.log_level)
    return settings


def _causes(err: BaseException | None) -> str:
    """ "activity error: the provider said no" from a chain of failures, innermost last."""
    parts: list[str] = []
    while err is not None:
        parts.append(str(err))
        err = err.__cause__
    return ": ".join(parts)


def _message(err: BaseException, settings: Settings) -> str | None:
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


def run[T](coro: Coroutine[Any, Any, T], settings: Settings) -> T:
    """Run a command's coroutine; expected failures become one line on stderr and exit code 1."""
    try:
        return asyncio.run(coro)
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        message, code = "interrupted", 130
    except Exception as err:
        found = _message(err, settings)
        if found is None:
            raise
        message, code = found, 1
    finally:
        # Free the Temporal clients (and an exception's traceback holding one) now, on this
        # thread: freed during interpreter shutdown instead, the SDK's native client crashes the
        # process (SIGSEGV, exit code 139) in about one run in twenty, one in six after a failed
        # connect.
        gc.collect()
    fail(message, code)


def start_tracing(service: str) -> None:
    """Trace this process as ``service`` when OTEL_TRACES_EXPORTER asks for it (runtime.tracing);
    before the first Temporal client connects, so its interceptor is added."""
    from runtime.tracing import TracingConfigError, configure_tracing  # the SDK: only when used

    try:
        configure_tracing(service)
    except TracingConfigError as e:
        fail(str(e))


def check_id(name: str, value: str) -> str:
    try:
        return _ID.validate_python(value)
    except ValidationError:
        fail(f"{name} {value!r} is not a valid id (letters, digits, _ . -; at most 128)")


# ---------------------------------------------------------------- output


def emit(data: object, *, as_json: bool, text: Callable[[], str]) -> None:
    """JSON of ``data`` with --json, else the human text."""
    if as_json:
        typer.echo(json.dumps(to_jsonable_python(data), indent=2, ensure_ascii=False))
    else:
        typer.echo(text())


_progress = Console(stderr=True)


@contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner on stderr while a long step runs (a plain line when stderr is not a terminal)."""
    if _progress.is_terminal:
        with _progress.status(message):
            yield
    else:
        typer.echo(message, err=True)
        yield


# ---------------------------------------------------------------- resources


@asynccontextmanager
async def store_of(settings: Settings) -> AsyncIterator[MemoryStore]:
    store = await open_store(settings)
    try:
        yield store
    finally:
        await store.close()


async def temporal_of(settings: Settings) -> Client:
    return await connect(settings.temporal, codec=settings.codec)


async def agent_of(store: MemoryStore, agent_id: str) -> AgentConfig:
    return await require_agent(store, check_id("agent", agent_id))


async def session_of(store: MemoryStore, session_id: str) -> SessionInfo:
    return await require_session(store, check_id("session", session_id))
