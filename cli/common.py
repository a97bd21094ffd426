"""What every `mnemos` command shares: settings, running a coroutine with one-line errors, output
as text or JSON, progress on stderr, and the store-side lookups of agents and sessions."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated

import typer
from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from rich.console import Console
from temporalio.client import Client

from memory.logging import configure_logging
from memory.lookup import require_agent, require_session
from memory.models import AgentConfig, Id, SessionInfo
from memory.settings import Settings, read_settings
from memory.settings_errors import InvalidSettingsError
from memory.store import MemoryStore, open_store
from runtime.command_line import fail as fail  # re-exported: every command ends through these
from runtime.command_line import run as run
from runtime.connection import connect

JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]

_ID = TypeAdapter(Id)


def load_settings() -> Settings:
    """Settings from MNEMOS_* variables, read fresh (a test or a shell may change them)."""
    try:
        settings = read_settings()
    except InvalidSettingsError as e:
        fail(str(e))
    configure_logging("warning" if settings.log_level == "info" else settings.log_level)
    return settings


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
    store = await open_store(settings, create=False)  # a mistyped path: an error, not a store
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


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """ "1 fact", "3 facts", "2 cache entries" (with ``plural``)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
