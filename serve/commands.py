"""Typer sub-apps for the CLI: ``mnemos serve``, ``mnemos keys create|list|revoke``, ``mnemos mcp``.

Mount them with ``app.add_typer(serve_app, name="serve")`` (and ``keys``, ``mcp``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated

import typer

from memory.errors import MnemosError
from memory.logging import configure_logging
from memory.settings import get_settings
from memory.store import open_store
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
async def keys_store(path: Path | None) -> AsyncIterator[ApiKeyStore]:
    """The keys of ``mnemos keys``: in the configured memory store, or in ``path`` when given."""
    if path is not None:
        yield JsonFileKeyStore(path)
        return
    store = await open_store(get_settings())
    try:
        yield StoreKeyStore(store)
    finally:
        await store.close()


async def _with_keys[T](path: Path | None, use: Callable[[ApiKeyStore], Awaitable[T]]) -> T:
    async with keys_store(path) as keys:
        return await use(keys)


# ---------------------------------------------------------------- mnemos serve

serve_app = typer.Typer(help="Serve the HTTP API and the memory page.")


async def _serve(host: str, port: int, keys_file: Path | None) -> None:
    import uvicorn

    from client.memory_client import MemoryClient
    from serve.app import create_app

    settings = get_settings()
    memory = await MemoryClient.connect(settings)
    keys = StoreKeyStore(memory.store) if keys_file is None else JsonFileKeyStore(keys_file)
    app = create_app(memory, keys, close_on_shutdown=True)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    typer.echo(f"mnemos: API and memory page on http://{host}:{port} (docs: /docs)", err=True)
    await uvicorn.Server(config).serve()


@serve_app.callback(invoke_without_command=True)
def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on")] = 8000,
    keys_file: KeysFile = None,
) -> None:
    """The API under /v1, the memory page under /ui, OpenAPI at /openapi.json.

    API keys are read from the memory store (create them with `mnemos keys create`), or from
    --keys-file when given."""
    configure_logging(get_settings().log_level)
    asyncio.run(_serve(host, port, keys_file))


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
    """Create a key; the key itself is printed once and never stored."""
    try:
        key, token = asyncio.run(
            _with_keys(
                keys_file,
                lambda k: k.create(agent, read_only=read_only, name=name, can_erase=erase),
            )
        )
    except MnemosError as e:
        raise typer.BadParameter(str(e)) from e
    typer.echo(_line(key), err=True)
    typer.echo(token)


@keys_app.command("list")
def list_keys(
    as_json: Annotated[bool, typer.Option("--json", help="JSON output")] = False,
    keys_file: KeysFile = None,
) -> None:
    """Every key (never the secrets)."""
    keys = asyncio.run(_with_keys(keys_file, lambda k: k.list()))
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
    try:
        key = asyncio.run(_with_keys(keys_file, lambda k: k.revoke(key_id)))
    except MnemosError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(1) from e
    typer.echo(_line(key))


# ---------------------------------------------------------------- mnemos mcp

mcp_app = typer.Typer(help="Serve one agent's memory as MCP tools over stdio.")


@mcp_app.callback(invoke_without_command=True)
def mcp(agent: Annotated[str, typer.Option("--agent", "-a", help="The agent's id")]) -> None:
    """search_facts, memory_context and remember, for an MCP client that spawns this command."""
    from serve.mcp_server import serve_stdio

    configure_logging(get_settings().log_level)
    asyncio.run(serve_stdio(agent))


def main() -> None:
    """``python -m serve.commands serve|keys|mcp``: the sub-apps before they join ``mnemos``."""
    app = typer.Typer(no_args_is_help=True)
    app.add_typer(serve_app, name="serve")
    app.add_typer(keys_app, name="keys")
    app.add_typer(mcp_app, name="mcp")
    app()


if __name__ == "__main__":
    main()
