"""`mnemos form`, `context` and `search`: what an agent backend does, from a shell."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict, Field

from cli.common import (
    JsonOption,
    agent_of,
    emit,
    fail,
    load_settings,
    progress,
    run,
    session_of,
    store_of,
    temporal_of,
)
from client.memory_client import MemoryClient
from memory.context import assemble_context
from memory.embedding import make_embedder
from memory.errors import InvalidInputError
from memory.models import AgentConfig, Id, MessageIn, RecordOutcome
from memory.rag import search_facts
from memory.search_results import SearchDebug, SearchResult
from memory.settings import Settings
from memory.store.base import MemoryStore
from workflows.naming import formation_workflow_id
from workflows.summary import FormationSummary


class Transcript(BaseModel):
    """A conversation file, as samples/conversation.json: the agent (or its id), a session, messages."""

    model_config = ConfigDict(extra="ignore")

    agent: AgentConfig | None = None
    agent_id: Id | None = None
    session_id: Id
    messages: list[MessageIn] = Field(min_length=1)


class FormOutcome(BaseModel):
    agent_id: str
    session_id: str
    workflow_id: str
    ui_url: str
    recorded: RecordOutcome | None = None
    summary: FormationSummary | None = None


def workflow_link(settings: Settings, workflow_id: str) -> str:
    t = settings.temporal
    return f"{t.ui_url}/namespaces/{t.namespace}/workflows/{workflow_id}"


async def _single_agent(store: MemoryStore, session_id: str) -> str:
    session = await session_of(store, session_id)
    if len(session.agent_ids) != 1:
        raise InvalidInputError(
            f"session {session_id!r} has agents {list(session.agent_ids)}: choose one with --agent"
        )
    return session.agent_ids[0]


async def _form(
    settings: Settings,
    source: str | Transcript,
    agent_opt: str | None,
    wait: bool,
    wait_seconds: float,
) -> FormOutcome:
    async with store_of(settings) as store:
        memory = MemoryClient(await temporal_of(settings), store, settings)
        recorded: RecordOutcome | None = None
        if isinstance(source, Transcript):
            transcript = source
            # Refused messages change nothing: checked before the agent is registered.
            memory.checked_messages(transcript.messages)
            # The transcript's agent block registers an agent the store does not have; one it
            # has keeps its configuration (a block of a name alone would reset its switches,
            # tier and persona), as an import keeps it.
            if transcript.agent is not None and not await store.get_agent(
                transcript.agent.agent_id
            ):
                await memory.register_agent(transcript.agent)
            agent_id = (
                agent_opt
                or transcript.agent_id
                or (transcript.agent.agent_id if transcript.agent else None)
            )
            if agent_id is None:
                raise InvalidInputError("the transcript names no agent: add one or pass --agent")
            session_id = transcript.session_id
            recorded = await memory.record_messages(agent_id, session_id, transcript.messages)
        else:
            session_id = source
            agent_id = agent_opt or await _single_agent(store, session_id)
        outcome = FormOutcome(
            agent_id=agent_id,
            session_id=session_id,
            workflow_id=formation_workflow_id(agent_id, session_id),
            ui_url=workflow_link(settings, formation_workflow_id(agent_id, session_id)),
            recorded=recorded,
        )
        if not wait:
            await memory.form_memories(agent_id, session_id, force=True, wait=False)
            return outcome
        with progress(
            f"Forming memories of {agent_id} in {session_id} "
            f"(needs a worker on task queue {settings.temporal.task_queue!r})…"
        ):
            try:
                async with asyncio.timeout(wait_seconds):
                    outcome.summary = await memory.form_memories(
                        agent_id, session_id, force=True, wait=True
                    )
            except TimeoutError:
                fail(f"no result within {wait_seconds:g} s; the run goes on: {outcome.ui_url}")
        return outcome


async def _read_transcript(path: Path) -> Transcript:
    return Transcript.model_validate_json(await asyncio.to_thread(path.read_bytes))


def _form_text(o: FormOutcome) -> str:
    lines = []
    if o.recorded is not None:
        lines.append(
            f"Recorded {o.recorded.inserted} new message(s), {o.recorded.duplicates} already known."
        )
    if o.summary is None:
        lines.append(f"Formation started: {o.workflow_id}")
    elif o.summary.formations == 0:
        lines.append("Nothing new to form.")
    else:
        lines.append(str(o.summary.memo()["summary"]))
    lines.append(f"Temporal UI: {o.ui_url}")
    return "\n".join(lines)


def form(
    source: Annotated[
        str,
        typer.Argument(
            help="A transcript JSON file (format of samples/conversation.json) to record, or the "
            "id of a session whose messages are already recorded.",
            show_default=False,
        ),
    ],
    agent: Annotated[
        str | None,
        typer.Option(
            help="Agent to form for (default: the file's agent, or the session's only one)."
        ),
    ] = None,
    wait: Annotated[bool, typer.Option(help="Wait for the run and print its summary.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the result.")] = 600,
    as_json: JsonOption = False,
) -> None:
    """Form memories now (below the thresholds too) through the FormMemories workflow.

    A running worker does the work (`mnemos worker`, or `mnemos up`).
    """
    settings = load_settings()
    path = Path(source)
    what: str | Transcript = source
    if path.suffix == ".json" or path.is_file():
        what = run(_read_transcript(path), settings)
    outcome = run(_form(settings, what, agent, wait, timeout), settings)
    emit(outcome, as_json=as_json, text=lambda: _form_text(outcome))


# ---------------------------------------------------------------- reading memory


async def _context(settings: Settings, agent_id: str, session_id: str, user: str | None) -> str:
    async with store_of(settings) as store:
        agent = await agent_of(store, agent_id)
        session = await session_of(store, session_id)
        return await assemble_context(
            store, settings, agent=agent, session=session, user_id=user, now=datetime.now(UTC)
        )


def context(
    agent: Annotated[str, typer.Argument(help="Agent id.", show_default=False)],
    session: Annotated[str, typer.Argument(help="Session id.", show_default=False)],
    user: Annotated[str | None, typer.Option(help="The user of this turn.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Print the <MemoryContext> XML the agent's next turn in this session would get."""
    settings = load_settings()
    xml = run(_context(settings, agent, session, user), settings)
    emit(
        {"agent_id": agent, "session_id": session, "user_id": user, "context": xml},
        as_json=as_json,
        text=lambda: xml or "(no memory yet)",
    )


async def _search(
    settings: Settings,
    agent_id: str,
    queries: list[str],
    session_id: str | None,
    user: str | None,
    top_k: int | None,
    debug: bool,
) -> SearchResult:
    async with store_of(settings) as store:
        agent = await agent_of(store, agent_id)
        session = await session_of(store, session_id) if session_id else None
        if user is None and session is not None and len(session.user_ids) == 1:
            user = session.user_ids[0]
        embedder = make_embedder(settings)
        try:
            return await search_facts(
                store,
                embedder,
                settings,
                agent=agent,
                session=session,
                user_id=user,
                queries=queries,
                top_k=top_k,
                debug=debug,
                now=datetime.now(UTC),
            )
        finally:
            await embedder.close()


def search(
    agent: Annotated[str, typer.Argument(help="Agent id.", show_default=False)],
    queries: Annotated[list[str], typer.Argument(help="One to three queries.", show_default=False)],
    session: Annotated[
        str | None, typer.Option(help="Session of the turn (its user's facts become visible).")
    ] = None,
    user: Annotated[str | None, typer.Option(help="User whose facts are visible.")] = None,
    top_k: Annotated[int | None, typer.Option(help="Facts to return per query.")] = None,
    debug: Annotated[bool, typer.Option(help="Include candidates, scores and timings.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Search facts the way the agent's search_facts tool does (hybrid vector + text, RRF)."""
    settings = load_settings()
    result = run(_search(settings, agent, queries, session, user, top_k, debug), settings)

    def text() -> str:
        lines = [
            f"{h.score:.3f}  [{h.scope}] {h.content}  ({h.age}, {h.fact_id})" for h in result.hits
        ] or ["(no match)"]
        if result.debug is not None:
            lines += _debug_lines(result.debug)
        return "\n".join(lines)

    emit(result, as_json=as_json, text=text)


def _debug_lines(debug: SearchDebug) -> list[str]:
    """--debug as text: each list's candidates (score, rank among those that passed its gate),
    the fused ranking and the timings; --json has every field."""
    gates = ", ".join(f"{k} {v:g}" for k, v in debug.thresholds.items())
    lines = [
        "",
        f"debug: mode {debug.mode}, model {debug.embedding_model or '-'}, top_k {debug.top_k}, "
        f"{debug.candidates_per_list} candidates per list, gates: {gates}",
    ]
    for c in debug.lists:
        ranked = ", ".join(
            f"{x.fact_id} {x.score:.3f}" + (f" #{x.rank}" if x.rank else " (below gate)")
            for x in c.candidates
        )
        asked = f" (asked {c.store_query!r})" if c.store_query != c.query else ""
        lines.append(f"  {c.source} {c.query!r}{asked}, {c.took_ms:.1f} ms: {ranked or '-'}")
    fused = ", ".join(
        f"{f.fact_id} rrf {f.rrf:.4f} score {f.score:.3f}" + ("" if f.passed else " (below gate)")
        for f in debug.fused
    )
    lines.append(f"  fused: {fused or '-'}")
    lines.append("  ms: " + ", ".join(f"{k} {v:.1f}" for k, v in debug.timings_ms.items()))
    return lines
