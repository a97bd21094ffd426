"""`mnemos up`, `worker`, `setup`, `setup-indexes` and `replay`: running and upgrading a deployment."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any

import typer
from google.protobuf.json_format import ParseError
from pydantic import BaseModel
from pymongo import AsyncMongoClient
from temporalio.client import WorkflowHistory

from cli.common import (
    JsonOption,
    emit,
    fail,
    load_settings,
    progress,
    run,
    start_tracing,
    temporal_of,
)
from cli.replay_child import ReplayOutcome
from cli.replay_runner import ChildReplayer
from memory.embedding import make_embedder
from memory.errors import EmbeddingMismatchError, InvalidInputError
from memory.logging import configure_logging, redact_text
from memory.settings import Settings
from memory.store import open_store
from memory.store.mongo.indexes import search_index_specs, setup_search_indexes
from runtime.connection import ensure_search_attributes
from runtime.metrics import MetricsEndpointError, install_runtime


def up(
    exit_after_demo: Annotated[
        bool, typer.Option("--exit", help="Stop after the demo instead of serving.")
    ] = False,
    api_port: Annotated[
        int,
        typer.Option(
            "--api-port",
            envvar="MNEMOS_API_PORT",
            help="Port of the HTTP API and memory page on 127.0.0.1 (0: not served).",
        ),
    ] = 8000,
) -> None:
    """The local stack of `make run`, with a demo conversation.

    Starts a Temporal dev server + UI (unless one runs), the store and a worker, forms the bundled
    conversation's memories and prints them, then serves the HTTP API and the memory page on
    http://127.0.0.1:8000 and prints a development API key. Ctrl-C stops everything.
    """
    from cli.demo import up as run_up  # imports the worker module: only for this command

    settings = load_settings()
    start_tracing("mnemos")
    try:
        install_runtime(settings)
    except MetricsEndpointError as e:  # the demo does not need metrics: say so and go on
        typer.echo(f"warning: {e}; running without /metrics", err=True)
    run(run_up(settings, exit_after_demo=exit_after_demo, api_port=api_port), settings)


async def _serve(settings: Settings) -> None:
    from worker import run_worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await run_worker(settings, stop)


def worker() -> None:
    """Run a worker: polls the task queue, runs formations and consolidations until SIGTERM/Ctrl-C.

    Serves Prometheus metrics at MNEMOS_TEMPORAL__METRICS_BIND (http://<bind>/metrics).
    """
    settings = load_settings()
    configure_logging(settings.log_level)  # a worker logs at its configured level, as JSON
    start_tracing("mnemos-worker")
    try:
        install_runtime(settings)
    except MetricsEndpointError as e:
        fail(str(e))
    if settings.temporal.metrics_bind:
        typer.echo(f"metrics: http://{settings.temporal.metrics_bind}/metrics", err=True)
    run(_serve(settings), settings)


# ---------------------------------------------------------------- set-up


class SetupResult(BaseModel):
    store: str
    search_attributes_added: list[str]


def store_location(settings: Settings) -> str:
    """Where the store is, as setup reports it: never a password a DSN or URI holds."""
    cfg = settings.store
    match cfg.backend:
        case "sqlite":
            return str(cfg.sqlite_path)
        case "postgres":
            return redact_text(cfg.postgres_dsn.get_secret_value() if cfg.postgres_dsn else "")
        case _:
            return cfg.mongodb_database


async def _setup(settings: Settings) -> SetupResult:
    store = await open_store(settings)  # creates tables/collections and regular indexes
    await store.close()
    client = await temporal_of(settings)
    added = await ensure_search_attributes(client)
    where = store_location(settings)
    return SetupResult(store=f"{settings.store.backend} ({where})", search_attributes_added=added)


def setup(as_json: JsonOption = False) -> None:
    """Create the store's tables and register the search attributes. Idempotent.

    Store: tables/collections and regular indexes. Temporal: the Mnemos* search attributes of the
    namespace (agent, user, session, outcome), for the UI's list filters. Safe in every deploy.
    """
    settings = load_settings()
    result = run(_setup(settings), settings)
    emit(
        result,
        as_json=as_json,
        text=lambda: (
            f"Store ready: {result.store}\nSearch attributes: "
            + (
                ", ".join(result.search_attributes_added) + " added"
                if result.search_attributes_added
                else "all present"
            )
        ),
    )


async def _dimension(settings: Settings, wanted: int | None) -> int:
    store = await open_store(settings)
    try:
        meta = await store.embedding_meta()
    finally:
        await store.close()
    if meta is not None:
        if wanted is not None and wanted != meta[1]:
            raise EmbeddingMismatchError(
                f"the stored facts have dimension {meta[1]} ({meta[0]}), not {wanted}"
            )
        return meta[1]
    if wanted is not None:
        return wanted
    embedder = make_embedder(settings)
    try:
        return embedder.dimension
    finally:
        await embedder.close()


async def _setup_indexes(settings: Settings, dimension: int | None) -> tuple[int, list[str]]:
    uri = settings.store.mongodb_uri
    if settings.store.backend != "mongo" or uri is None:
        raise InvalidInputError(
            "setup-indexes is for MongoDB Atlas: set MNEMOS_STORE__BACKEND=mongo and "
            "MNEMOS_STORE__MONGODB_URI (or use --print to see the definitions)"
        )
    dim = await _dimension(settings, dimension)
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri.get_secret_value())
    try:
        with progress("Creating the Atlas Search indexes…"):
            changed = await setup_search_indexes(client[settings.store.mongodb_database], dim)
    finally:
        await client.close()
    return dim, changed


def setup_indexes(
    dimension: Annotated[
        int | None,
        typer.Option(help="Vector dimension (default: the stored facts', else the embedder's)."),
    ] = None,
    print_only: Annotated[
        bool,
        typer.Option("--print", help="Only print the index definitions (for the Atlas UI or IaC)."),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Create or update the Atlas Search indexes on `facts`. Idempotent.

    A vector index (cosine, with the filter fields) and a text index. Atlas builds them in the
    background; the store uses them once READY (until then: $text and exact cosine).
    """
    settings = load_settings()
    if print_only:
        dim = dimension or run(_dimension(settings, None), settings)
        specs = [
            {"name": s.name, "type": s.type, "definition": s.definition}
            for s in search_index_specs(dim)
        ]
        emit(specs, as_json=True, text=str)
        return
    dim, changed = run(_setup_indexes(settings, dimension), settings)
    emit(
        {"dimension": dim, "changed": changed},
        as_json=as_json,
        text=lambda: (
            f"Created or updated: {', '.join(changed)} (dimension {dim})"
            if changed
            else f"Atlas Search indexes already up to date (dimension {dim})"
        ),
    )


# ---------------------------------------------------------------- replay


async def _server_histories(
    settings: Settings, query: str | None, limit: int, export: Path | None
) -> AsyncIterator[WorkflowHistory]:
    client = await temporal_of(settings)
    query = query or f"TaskQueue = '{settings.temporal.task_queue}'"
    async for history in client.list_workflows(query, limit=limit).map_histories():
        if export is not None:
            await asyncio.to_thread(_save, export, history)
        yield history


def _save(directory: Path, history: WorkflowHistory) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{history.workflow_id}.{history.run_id}.json".replace(":", "_")
    (directory / name).write_text(history.to_json())


# A real history replays in well under a second; a replay still running after this is stuck (the
# SDK core can wait for ever on a history it cannot start): its child process is killed and the
# history reported as a FAIL (cli/replay_runner.py).
REPLAY_TIMEOUT_SECONDS = 60.0


def _read(path: Path) -> WorkflowHistory | ReplayOutcome:
    """One history file, or a FAIL naming the file and why it cannot be replayed. The SDK hangs
    or fails an assertion on these shapes, so they fail here at once, not at the time limit."""
    try:
        history = WorkflowHistory.from_json(path.stem, path.read_text())
    except (OSError, ValueError, TypeError, KeyError, ParseError) as exc:
        return _unreplayable(path, f"not a workflow history: {exc}")
    why = _shape_error(history)
    return history if why is None else _unreplayable(path, why)


def _shape_error(history: WorkflowHistory) -> str | None:
    """Why a parsed history cannot be replayed, cheaply checked; None when it may be."""
    if not history.events:
        return "the history has no events"
    first = history.events[0]
    if not first.HasField("workflow_execution_started_event_attributes"):
        return "the first event is not WorkflowExecutionStarted"
    if not first.workflow_execution_started_event_attributes.workflow_type.name:
        return "the WorkflowExecutionStarted event names no workflow type"
    for expected, event in enumerate(history.events, start=1):
        if event.event_id != expected:
            return f"event ids do not count 1, 2, 3…: event {expected} has id {event.event_id}"
    return None


def _unreplayable(path: Path, why: str) -> ReplayOutcome:
    return ReplayOutcome(workflow_id=path.name, run_id="", ok=False, error=f"{path}: {why}")


def _load(directory: Path) -> list[WorkflowHistory | ReplayOutcome]:
    paths = sorted(directory.glob("*.json"))
    if not paths:
        raise InvalidInputError(f"no *.json histories in {directory}")
    return [_read(p) for p in paths]


async def _each(
    items: list[WorkflowHistory | ReplayOutcome],
) -> AsyncIterator[WorkflowHistory | ReplayOutcome]:
    for item in items:
        yield item


async def _replay(
    settings: Settings,
    query: str | None,
    limit: int,
    directory: Path | None,
    export: Path | None,
    as_json: bool,
) -> list[ReplayOutcome]:
    histories: AsyncIterator[WorkflowHistory | ReplayOutcome] = (
        _each(await asyncio.to_thread(_load, directory))
        if directory is not None
        else _server_histories(settings, query, limit, export)
    )
    outcomes: list[ReplayOutcome] = []
    # One replay at a time, each bounded in a child process, so one stuck or crashing history
    # cannot stop the others.
    async with ChildReplayer(REPLAY_TIMEOUT_SECONDS) as replayer:
        async for item in histories:
            outcome = item if isinstance(item, ReplayOutcome) else await replayer.replay(item)
            outcomes.append(outcome)
            if not as_json:  # progress: one line per history as it is replayed
                mark = "ok  " if outcome.ok else "FAIL"
                typer.echo(f"{mark} {outcome.workflow_id}  {outcome.error or ''}".rstrip())
    return outcomes


def replay(
    limit: Annotated[int, typer.Option(help="Most recent runs to replay.")] = 50,
    query: Annotated[
        str | None,
        typer.Option(help="Visibility query (default: runs on this deployment's task queue)."),
    ] = None,
    directory: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            help="Replay history JSON files from this directory instead of the server.",
            file_okay=False,
        ),
    ] = None,
    export: Annotated[
        Path | None,
        typer.Option(help="Also save the fetched histories as JSON files here.", file_okay=False),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replay histories of recent runs against the current workflow code.

    A failure means the new code would break runs in flight: do not deploy it (README.md,
    "Operators", "Upgrades"). Exit code 1 when any history fails.
    """
    settings = load_settings()
    outcomes = run(_replay(settings, query, limit, directory, export, as_json), settings)
    failed = [o for o in outcomes if not o.ok]
    emit(
        outcomes,
        as_json=as_json,
        text=lambda: (
            f"Replayed {len(outcomes)} histories: {len(outcomes) - len(failed)} ok, {len(failed)} failed."
        ),
    )
    if failed:
        raise typer.Exit(1)
    if not outcomes:
        fail("no histories to replay")
