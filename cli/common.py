"""What every `mnemos` command shares: settings, running a coroutine with one-line errors, output
as text or JSON, progress on stderr, and the store-side lookups of agents and sessions."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import re
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any, NoReturn

import typer
from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from pydantic_settings import SettingsError
from rich.console import Console
from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RPCError

from memory.errors import MnemosError
from memory.logging import configure_logging
from memory.lookup import require_agent, require_session
from memory.models import AgentConfig, Id, SessionInfo
from memory.settings import Settings
from memory.store import MemoryStore, open_store
from runtime.connection import connect, connect_config

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]

_ID = TypeAdapter(Id)


def fail(message: str, code: int = 1) -> NoReturn:
    """One line on stderr and a non-zero exit: what an operator reads, never a traceback."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _validation_line(err: ValidationError) -> str:
    parts = []
    for e in err.errors()[:3]:
        where = ".".join(str(p) for p in e["loc"]) or "input"
        parts.append(f"{where}: {e['msg']}")
    more = f" (+{err.error_count() - 3} more)" if err.error_count() > 3 else ""
    return "; ".join(parts) + more


def _settings_error_line(err: SettingsError) -> str:
    """What pydantic-settings could not parse (a structured variable that is no JSON), by field and
    variable name. Never the value, which may be a secret: values of MNEMOS_* variables are cut
    out of the cause's message too."""
    match = re.search(r'field "([^"]+)"', str(err))
    field = match.group(1) if match else None
    variables = sorted(
        name
        for name in os.environ
        if field is not None
        and (
            name.upper() == f"MNEMOS_{field.upper()}"
            or name.upper().startswith(f"MNEMOS_{field.upper()}__")
        )
    )
    where = field or "environment"
    if variables:
        where += f" ({', '.join(variables)})"
    cause = err.__cause__
    if cause is None:
        return f"{where}: {err}"
    detail = str(cause)
    for name, value in os.environ.items():
        if name.upper().startswith("MNEMOS_") and len(value) >= 3:
            detail = detail.replace(value, "[redacted]")
    kind = "not valid JSON" if isinstance(cause, json.JSONDecodeError) else "cannot be parsed"
    return f"{where}: {kind} ({detail})"


def load_settings() -> Settings:
    """Settings from MNEMOS_* variables, read fresh (a test or a shell may change them)."""
    try:
        settings = Settings()
    except ValidationError as e:
        fail(f"invalid settings: {_validation_line(e)}")
    except SettingsError as e:
        fail(f"invalid settings: {_settings_error_line(e)}")
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
            return f"invalid input: {_validation_line(err)}"
        case MnemosError():
            return str(err)
        case RPCError():
            return f"Temporal: {err.message}"
        case WorkflowFailureError():
            return f"the run failed: {_causes(err.cause)} (its history is in the Temporal UI)"
        case OSError() | json.JSONDecodeError():
            return str(err)
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
