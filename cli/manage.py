"""`mnemos facts|reflections|consolidated|stats|status`: look at and correct an agent's memory
(seed 004 "Managing User Memory"), through client.management.MemoryManager, which a backend UI
uses the same way. Deleted facts are kept (marked deleted, with their history); a manual edit of a
consolidated memory is a new version."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

import typer

from cli.common import JsonOption, check_id, emit, fail, load_settings, run, store_of
from client.management import MemoryManager
from memory.embedding import make_embedder
from memory.errors import InvalidInputError, NotFoundError
from memory.models import SET_ASIDE, ConsolidatedMemory, Fact, FactFilter, Reflection, ScopeKey
from memory.said import said_time
from memory.settings import Settings

facts = typer.Typer(help="List, show, correct and delete facts.", no_args_is_help=True)
reflections = typer.Typer(
    help="List, correct and delete buffered reflections.", no_args_is_help=True
)
consolidated = typer.Typer(
    help="Show and edit consolidated memories (one versioned text per scope).",
    no_args_is_help=True,
)

Agent = Annotated[str, typer.Argument(help="Agent id.", show_default=False)]
User = Annotated[str | None, typer.Option(help="User id: the user scope.")]
Session = Annotated[str | None, typer.Option(help="Session id: the session scope.")]
FactId = Annotated[str, typer.Argument(help="Fact id.", show_default=False)]
ReflectionId = Annotated[str, typer.Argument(help="Reflection id.", show_default=False)]
Reason = Annotated[str | None, typer.Option(help="Kept in the fact's history.")]


@asynccontextmanager
async def _manager(settings: Settings) -> AsyncIterator[MemoryManager]:
    async with store_of(settings) as store:
        embedder = make_embedder(settings)  # the local model loads on first use: only edits pay
        try:
            yield MemoryManager(store, embedder, settings)
        finally:
            await embedder.close()


def _managed[T](fn: Callable[[MemoryManager], Awaitable[T]]) -> T:
    settings = load_settings()

    async def go() -> T:
        async with _manager(settings) as manager:
            return await fn(manager)

    return run(go(), settings)


def scope_key(agent: str, user: str | None, session: str | None) -> ScopeKey:
    """The scope the options name: --session, --user, or the agent's own."""
    if user is not None and session is not None:
        fail("give --user or --session, not both: a scope is one of agent, user or session")
    check_id("agent", agent)
    if session is not None:
        return ScopeKey.session(agent, check_id("session", session))
    if user is not None:
        return ScopeKey.user(agent, check_id("user", user))
    return ScopeKey.agent(agent)


def _owner(f: Fact) -> str:
    return f"user {f.user_id}" if f.scope == "user" else "agent"


def _fact_line(f: Fact) -> str:
    deleted = " DELETED" if f.invalidated_at else ""
    return f"{f.fact_id}  [{_owner(f)}] {f.content}  (v{f.version}, {f.updated_at:%Y-%m-%d %H:%M}{deleted})"


# ---------------------------------------------------------------- facts


@facts.command("list")
def facts_list(
    agent: Agent,
    user: Annotated[str | None, typer.Option(help="Also this user's facts (user scope).")] = None,
    agent_scope: Annotated[bool, typer.Option(help="Include the agent-scoped facts.")] = True,
    deleted: Annotated[bool, typer.Option(help="Include deleted facts.")] = False,
    offset: Annotated[int, typer.Option(help="Skip this many (paging; prefer --cursor).")] = 0,
    limit: Annotated[int, typer.Option(help="Facts per page.")] = 50,
    cursor: Annotated[
        str | None,
        typer.Option(help="The page a listing named (next page: …): skips nothing on deletes."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Facts an agent holds, last changed first."""
    flt = FactFilter(
        agent_id=check_id("agent", agent),
        user_id=check_id("user", user) if user else None,
        include_agent_scope=agent_scope,
    )
    page = _managed(
        lambda m: m.list_facts(
            flt, include_invalid=deleted, offset=offset, limit=limit, cursor=cursor
        )
    )

    def text() -> str:
        lines = [_fact_line(f) for f in page.facts] or ["(no facts)"]
        more = f"; next page: --cursor {page.next_cursor}" if page.next_cursor else ""
        lines.append(f"{page.valid_total} valid fact(s){more}")
        return "\n".join(lines)

    emit(page, as_json=as_json, text=text)


def _history_text(f: Fact) -> str:
    lines = [
        _fact_line(f),
        # An imported fact (mem0, a hand-made file) came from no session of this store.
        f"formed {f.formed_at:%Y-%m-%d %H:%M}"
        + (f" from session {f.source_session_id}" if f.source_session_id else " (imported)"),
    ]
    if f.said_at:
        lines.append(f"said {said_time(f.said_at, f.said_utc_offset_minutes)}")
    if f.source_message_ids:
        by = f" (formation {f.formation_id})" if f.formation_id else ""
        lines.append(f"from messages {', '.join(f.source_message_ids)}{by}")
    if f.invalidated_at:
        by = f" (replaced by {f.invalidated_by})" if f.invalidated_by else ""
        lines.append(f"deleted {f.invalidated_at:%Y-%m-%d %H:%M}{by}")
    for rev in f.history:
        reason = f" ({rev.reason})" if rev.reason else ""
        lines.append(f"  v{rev.version} {rev.changed_at:%Y-%m-%d %H:%M}{reason}: {rev.content}")
    return "\n".join(lines)


@facts.command("show")
def facts_show(fact_id: FactId, as_json: JsonOption = False) -> None:
    """One fact with its history of versions."""
    fact = _managed(lambda m: m.show_fact(fact_id))
    emit(fact, as_json=as_json, text=lambda: _history_text(fact))


@facts.command("edit")
def facts_edit(
    fact_id: FactId,
    text: Annotated[str, typer.Argument(help="The corrected fact.", show_default=False)],
    reason: Reason = None,
    as_json: JsonOption = False,
) -> None:
    """Correct a fact: a new version (the old text stays in its history) with a new embedding."""
    fact = _managed(lambda m: m.edit_fact(fact_id, text, reason=reason or "manual edit"))
    emit(fact, as_json=as_json, text=lambda: _fact_line(fact))


@facts.command("delete")
def facts_delete(fact_id: FactId, reason: Reason = None, as_json: JsonOption = False) -> None:
    """Delete a fact: kept with its history, marked deleted, never shown to the agent again."""
    fact = _managed(lambda m: m.delete_fact(fact_id, reason=reason or "manual delete"))
    emit(fact, as_json=as_json, text=lambda: _fact_line(fact))


# ---------------------------------------------------------------- reflections


def _reflection_line(r: Reflection) -> str:
    if r.absorbed_into_version is None:
        state = "buffered"
    elif r.absorbed_into_version == SET_ASIDE:
        state = "set aside: no consolidation could take it; edit it to try again"
    else:
        state = f"absorbed in v{r.absorbed_into_version}"
    return f"{r.reflection_id}  {r.content}  ({state}, {r.formed_at:%Y-%m-%d %H:%M})"


@reflections.command("list")
def reflections_list(
    agent: Agent,
    user: User = None,
    session: Session = None,
    absorbed: Annotated[bool, typer.Option(help="Include those already consolidated.")] = False,
    limit: Annotated[int, typer.Option(help="Most reflections to show.")] = 100,
    as_json: JsonOption = False,
) -> None:
    """Reflections of a scope (the agent's, or --user's, or --session's), newest first."""
    key = scope_key(agent, user, session)
    found = _managed(lambda m: m.list_reflections(key, include_absorbed=absorbed, limit=limit))
    emit(
        found,
        as_json=as_json,
        text=lambda: "\n".join(_reflection_line(r) for r in found) or f"(none in {key.key})",
    )


async def _key_of(manager: MemoryManager, reflection_id: str) -> ScopeKey:
    found = await manager.store.get_reflection(reflection_id)
    if found is None:
        raise NotFoundError(f"no reflection {reflection_id!r}")
    return found.scope_key


@reflections.command("edit")
def reflections_edit(
    reflection_id: ReflectionId,
    text: Annotated[str, typer.Argument(help="The corrected reflection.", show_default=False)],
    as_json: JsonOption = False,
) -> None:
    """Correct a buffered reflection before it is consolidated (absorbed ones: edit the blob)."""

    async def edit(m: MemoryManager) -> Reflection:
        return await m.edit_reflection(await _key_of(m, reflection_id), reflection_id, text)

    found = _managed(edit)
    emit(found, as_json=as_json, text=lambda: _reflection_line(found))


@reflections.command("delete")
def reflections_delete(reflection_id: ReflectionId, as_json: JsonOption = False) -> None:
    """Remove a buffered reflection (absorbed ones are part of the blob: edit it instead)."""

    async def delete(m: MemoryManager) -> None:
        await m.delete_reflection(await _key_of(m, reflection_id), reflection_id)

    _managed(delete)
    emit(
        {"reflection_id": reflection_id, "deleted": True},
        as_json=as_json,
        text=lambda: f"deleted {reflection_id}",
    )


# ---------------------------------------------------------------- consolidated memory


def _blob_text(blob: ConsolidatedMemory) -> str:
    head = (
        f"{blob.scope_key.key} v{blob.version} ({blob.edited_by}, "
        f"{blob.updated_at:%Y-%m-%d %H:%M}, limit {blob.word_limit} words)"
    )
    return f"{head}\n{blob.content}"


@consolidated.command("show")
def consolidated_show(
    agent: Agent, user: User = None, session: Session = None, as_json: JsonOption = False
) -> None:
    """The consolidated memory of a scope (the agent's, or --user's, or --session's)."""
    key = scope_key(agent, user, session)
    blob = _managed(lambda m: m.show_consolidated(key))
    if blob is None and not as_json:
        fail(f"{key.key} has no consolidated memory yet", code=2)
    emit(blob, as_json=as_json, text=lambda: _blob_text(blob) if blob else "")


def _read_text(text: str | None, file: Path | None) -> str:
    if text is not None and file is not None:
        raise InvalidInputError("give the new text or --file, not both")
    if file is not None:
        name = "stdin" if str(file) == "-" else str(file)
        try:
            return sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InvalidInputError(
                f"cannot read {name}: not UTF-8 text ({e.reason} at byte {e.start})"
            ) from e
        except OSError as e:
            raise InvalidInputError(f"cannot read {name}: {e.strerror or e}") from e
    if text is None:
        raise InvalidInputError("give the new text, or --file (- for stdin)")
    return text


@consolidated.command("edit")
def consolidated_edit(
    agent: Agent,
    text: Annotated[
        str | None, typer.Argument(help="The new text (or use --file).", show_default=False)
    ] = None,
    file: Annotated[
        Path | None, typer.Option(help="Read the new text from a file; - for stdin.")
    ] = None,
    user: User = None,
    session: Session = None,
    expected_version: Annotated[
        int | None,
        typer.Option(help="Refuse if the blob is no longer at this version (the one you edited)."),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Replace a consolidated memory by your text, as a new version marked "manual"."""
    key = scope_key(agent, user, session)
    if expected_version is not None and expected_version < 0:
        fail(f"--expected-version {expected_version}: a version is 0 or more")
    settings = load_settings()

    async def edit() -> ConsolidatedMemory:
        body = _read_text(text, file)
        async with _manager(settings) as m:
            return await m.edit_consolidated(key, body, expected_version=expected_version)

    blob = run(edit(), settings)
    emit(blob, as_json=as_json, text=lambda: _blob_text(blob))


# ---------------------------------------------------------------- overview


def stats(
    agent: Agent, user: User = None, session: Session = None, as_json: JsonOption = False
) -> None:
    """Per scope: consolidated memory version and size, buffered reflections, valid facts."""
    result = _managed(lambda m: m.stats(agent, user, session))

    def text() -> str:
        lines = []
        for s in result.scopes:
            facts_part = "" if s.valid_facts is None else f", {s.valid_facts} valid fact(s)"
            blob = (
                f"v{s.blob_version} ({s.blob_words} words, {s.blob_edited_by})"
                if s.blob_version
                else "none yet"
            )
            lines.append(
                f"{s.scope_key.key}: consolidated {blob}, "
                f"{s.buffered_reflections} buffered reflection(s){facts_part}"
            )
        return "\n".join(lines)

    emit(result, as_json=as_json, text=text)


def status(
    agent: Agent, user: User = None, session: Session = None, as_json: JsonOption = False
) -> None:
    """Per scope: buffered reflections against the threshold that triggers consolidation."""
    result = _managed(lambda m: m.consolidation_status(agent, user, session))
    emit(
        result,
        as_json=as_json,
        text=lambda: "\n".join(
            f"{s.scope_key.key}: {s.buffered}/{s.threshold} buffered"
            f"{' — due: the next formation consolidates' if s.due else ''} (blob v{s.blob_version})"
            for s in result
        ),
    )
