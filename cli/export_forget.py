"""`mnemos export`, `mnemos forget`: take a person's memories out, erase them (issue 15; README
"Your data"; bringing memories in: cli/lifecycle.py)."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, TextIO

import typer

from cli.common import JsonOption, check_id, counted, emit, fail, load_settings, run, temporal_of
from cli.output_file import replacing
from memory.lifecycle.exporting import export_store
from memory.lookup import require_agent
from memory.store import open_store
from memory.store.counts import ForgetCounts


def export(
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this user's memories.")] = None,
    messages: Annotated[bool, typer.Option("--messages", help="Messages too.")] = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="File to write (default: stdout).")
    ] = None,
) -> None:
    """Everything as JSON Lines: agents, facts with history and vectors, reflections, blobs."""
    settings = load_settings()
    for name, value in (("agent", agent), ("user", user)):
        if value is not None:
            check_id(name, value)

    async def go(out: TextIO) -> dict[str, int]:
        store = await open_store(settings, create=False)
        try:
            if agent is not None:
                await require_agent(store, agent)
            return await export_store(
                store, out, agent_id=agent, user_id=user, messages=messages, now=datetime.now(UTC)
            )
        finally:
            await store.close()

    if output is None:
        counts = run(go(sys.stdout), settings)
    else:
        with replacing(output) as f:
            counts = run(go(f), settings)
    summary = ", ".join(counted(n, kind) for kind, n in counts.items())
    typer.echo(f"exported {summary}" if summary else "nothing to export", err=True)


def _session_runs_left(session_scopes: list[str]) -> str:
    """What a second forget cannot find: the closed runs of the sessions this one deleted."""
    from runtime.erasure import session_workflow_ids, workflow_ids_queries

    queries = workflow_ids_queries(session_workflow_ids(session_scopes))
    if not queries:
        return ""
    # Ids hold no quote nor anything a shell expands (memory.model_types.Id).
    deletes = "\n".join(f'  temporal workflow delete --query "{q}"' for q in queries)
    return (
        "; then delete the runs of the sessions this forget deleted (a second one cannot find "
        "them):\n" + deletes
    )


def forget(
    user: Annotated[str, typer.Option(help="The user to erase.", show_default=False)],
    agent: Annotated[
        str | None, typer.Option(help="Erase the user's memories of this agent.")
    ] = None,
    all_agents: Annotated[
        bool, typer.Option("--all-agents", help="Erase the user's memories of every agent.")
    ] = False,
    keep_executions: Annotated[
        bool,
        typer.Option(
            "--keep-executions",
            help="Do not delete the user's closed workflow executions from Temporal.",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Hard-delete a user: facts with history, user memory, messages, cache entries; then their
    closed workflow executions. Agent-scope memory is not keyed by a user and stays."""
    if (agent is None) == (not all_agents):
        fail("give --agent A or --all-agents")
    settings = load_settings()
    check_id("user", user)
    if agent is not None:
        check_id("agent", agent)

    async def erase() -> list[ForgetCounts]:
        from client.management import MemoryManager
        from memory.embedding import make_embedder

        store = await open_store(settings, create=False)
        embedder = make_embedder(settings)
        try:
            return await MemoryManager(store, embedder, settings).forget_user(user, agent_id=agent)
        finally:
            await embedder.close()
            await store.close()

    counts = run(erase(), settings)
    # The sessions whose memory the store deleted, their consolidation runs tagged with no user:
    # only this call knows them (a second one finds those sessions gone).
    sessions = [key for c in counts for key in c.session_scopes]

    async def delete_executions() -> int:
        from runtime.erasure import delete_user_executions

        return await delete_user_executions(await temporal_of(settings), user, agent, sessions)

    executions: int | None = None
    # A namespace without the Mnemos search attributes is not queried (as the client does).
    if not keep_executions and settings.temporal.search_attributes:
        try:
            executions = run(delete_executions(), settings)
        except typer.Exit:
            # The store part is done (and repeating it is harmless): say what is left to do.
            typer.echo(
                "error: the user's memories are erased from the store, but their closed "
                "workflow executions are not deleted: run this command again once Temporal "
                "is reachable (or pass --keep-executions)" + _session_runs_left(sessions),
                err=True,
            )
            raise

    def text() -> str:
        lines = [
            f"agent {c.agent_id}: deleted "
            + ", ".join(
                (
                    counted(c.facts, "fact"),
                    counted(c.reflections, "reflection"),
                    counted(c.blobs, "blob"),
                    counted(c.messages, "message"),
                    counted(c.sessions, "session"),
                    counted(c.embedding_cache, "cache entry", "cache entries"),
                )
            )
            for c in counts
        ] or [f"nothing of user {user} was stored"]
        if executions is not None:
            lines.append(f"workflow executions deleted: {executions}")
        return "\n".join(lines)

    emit({"agents": counts, "workflow_executions_deleted": executions}, as_json=as_json, text=text)
