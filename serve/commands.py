"""Typer sub-apps for the CLI: ``mnemos serve``, ``mnemos keys create|list|revoke``, ``mnemos mcp``.

Mount them with ``app.add_typer(serve_app, name="serve")`` (and ``keys``, ``mcp``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated

import typer
from pydantic import TypeAdapter, ValidationError

from memory.errors import MnemosError
from memory.logging import configure_logging
from memory.models import Id
from memory.settings import Settings, get_settings, read_settings
from memory.store import open_store
from runtime.command_line import fail, run
from runtime.metrics import MetricsEndpointError, install_runtime
from runtime.tracing import TracingConfigError, configure_tracing
from serve.keys import ApiKey, ApiKeyStore, JsonFileKeyStore, StoreKeyStore

KeysFile = Annotated[
    Path | None,
    typer.Option(
        "--keys-file",
        envvar="MNEMOS_API_KEYS_FILE",
        help="Keep API keys in this JSON file instead of the memory store (the default, shared "
        "by every replica)",
    ),
]


@contextlib.asynccontextmanager
async def keys_store(
    path: Path | None, settings: Settings | None = None
) -> AsyncIterator[ApiKeyStore]:
    """The keys of ``mnemos keys list|revoke``: in the configured memory store (one that exists:
    a mistyped path lists nothing), or in ``path`` when given."""
    if path is not None:
        yield JsonFileKeyStore(path)
        return
    store = await open_store(settings or get_settings(), create=False)
    try:
        yield StoreKeyStore(store)
    finally:
        await store.close()


async def _with_keys[T](
    path: Path | None, use: Callable[[ApiKeyStore], Awaitable[T]], settings: Settings
) -> T:
    async with keys_store(path, settings) as keys:
        return await use(keys)


# ---------------------------------------------------------------- one-line errors

_ID = TypeAdapter(Id)


def _settings() -> Settings:
    """The settings in the environment now (InvalidSettingsError: one line)."""
    try:
        return read_settings()
    except MnemosError as e:
        fail(str(e))


# ---------------------------------------------------------------- mnemos serve

serve_app = typer.Typer(help="Serve the HTTP API and the memory page.")


async def _serve(host: str, port: int, keys_file: Path | None, settings: Settings) -> None:
    import uvicorn

    from client.memory_client import MemoryClient
    from serve.app import create_app

    listening = _listen(host, port)  # before connecting: a port in use fails at once
    memory = await MemoryClient.connect(settings)
    keys = StoreKeyStore(memory.store) if keys_file is None else JsonFileKeyStore(keys_file)
    app = create_app(memory, keys, close_on_shutdown=True)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    typer.echo(f"mnemos: API and memory page on http://{host}:{port} (docs: /docs)", err=True)
    await uvicorn.Server(config).serve(sockets=[listening])


def _listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound here: uvicorn, binding itself, only logs a port in use and
    exits with code 3, after this command has said where it serves."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, reuse_port=False)
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else str(e)
        raise OSError(f"cannot listen on {host}:{port}: {reason}") from e


@serve_app.callback(invoke_without_command=True)
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8000,
    keys_file: KeysFile = None,
) -> None:
    """The API under /v1, the memory page under /ui, OpenAPI at /openapi.json.

    API keys are read from the memory store (create them with `mnemos keys create`), or from
    --keys-file when given."""
    settings = _settings()
    configure_logging(settings.log_level)
    try:
        configure_tracing("mnemos-api")  # OTEL_TRACES_EXPORTER; before the client connects
    except TracingConfigError as e:
        fail(str(e))
    try:  # deferred triggers and search latency, at MNEMOS_TEMPORAL__METRICS_BIND
        install_runtime(settings)
    except MetricsEndpointError as e:  # e.g. a worker on this host holds the port: serve anyway
        typer.echo(f"warning: {e}; serving without /metrics", err=True)
    run(_serve(host, port, keys_file, settings), settings)


# ---------------------------------------------------------------- mnemos keys

keys_app = typer.Typer(
    help="Create, list and revoke API keys (kept hashed in the memory store; --keys-file for a "
    "JSON file instead).",
    no_args_is_help=True,
)


def _line(key: ApiKey) -> str:
    state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
    mode = "read-only" if key.read_only else "read-write" + (", erase" if key.can_erase else "")
    name = f" {key.name!r}" if key.name else ""
    return f"{key.key_id}{name}  agents={','.join(key.agent_ids)}  {mode}  {state}"


@keys_app.command("create")
def create(
    agent: Annotated[list[str], typer.Option("--agent", "-a", help="Agent id (repeatable)")],
    read_only: Annotated[bool, typer.Option("--read-only", help="Reads only")] = False,
    erase: Annotated[
        bool, typer.Option("--erase", help="May also erase a user's whole memory")
    ] = False,
    name: Annotated[str, typer.Option(help="A label to recognise it")] = "",
    keys_file: KeysFile = None,
) -> None:
    """Create a key; the key itself is printed once and never stored. An agent not registered
    yet is named in a note: a key is how a backend registers its agent (POST /v1/agents), and a
    mistyped id shows there."""
    for agent_id in agent:
        try:
            _ID.validate_python(agent_id)
        except ValidationError:
            fail(f"agent {agent_id!r} is not a valid id (letters, digits, _ . -; at most 128)")
    settings = _settings()

    async def create_key() -> tuple[ApiKey, str, list[str]]:
        if keys_file is not None:  # the keys of a `mnemos serve --keys-file`: no store opened
            key, token = await JsonFileKeyStore(keys_file).create(
                agent, read_only=read_only, name=name, can_erase=erase
            )
            return key, token, []
        store = await open_store(settings)
        try:
            unknown = [a for a in agent if await store.get_agent(a) is None]
            key, token = await StoreKeyStore(store).create(
                agent, read_only=read_only, name=name, can_erase=erase
            )
            return key, token, unknown
        finally:
            await store.close()

    key, token, unknown = run(create_key(), settings)
    typer.echo(_line(key), err=True)
    for agent_id in unknown:
        typer.echo(
            f"note: agent {agent_id!r} is not registered yet: register it with this key "
            "(POST /v1/agents), or check the id",
            err=True,
        )
    typer.echo(token)


@keys_app.command("list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    keys_file: KeysFile = None,
) -> None:
    """Every key (never the secrets)."""
    settings = _settings()
    keys = run(_with_keys(keys_file, lambda k: k.list(), settings), settings)
    if as_json:
        data = [k.model_dump(mode="json", exclude={"secret_sha256"}) for k in keys]
        typer.echo(json.dumps(data, indent=2))
        return
    for key in keys:
        typer.echo(_line(key))
    if not keys:
        typer.echo("no API keys yet: mnemos keys create --agent <id>")


@keys_app.command("revoke")
def revoke(key_id: str, keys_file: KeysFile = None) -> None:
    """Revoke a key by its id (the part after mk_): it stops working at once."""
    settings = _settings()
    key = run(_with_keys(keys_file, lambda k: k.revoke(key_id), settings), settings)
    typer.echo(_line(key))


# ---------------------------------------------------------------- mnemos mcp

mcp_app = typer.Typer(help="Serve one agent's memory as MCP tools over stdio.")


@mcp_app.callback(invoke_without_command=True)
def mcp(agent: Annotated[str, typer.Option("--agent", "-a", help="The agent's id")]) -> None:
    """search_facts, memory_context and remember, for an MCP client that spawns this command."""
    from serve.mcp_server import serve_stdio

    settings = _settings()
    configure_logging(settings.log_level)
    run(serve_stdio(agent, settings), settings)


def main() -> None:
    """``python -m serve.commands serve|keys|mcp``: the sub-apps before they join ``mnemos``."""
    app = typer.Typer(no_args_is_help=True)
    app.add_typer(serve_app, name="serve")
    app.add_typer(keys_app, name="keys")
    app.add_typer(mcp_app, name="mcp")
    app()


if __name__ == "__main__":
    main()
