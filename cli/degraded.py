"""`mnemos degraded list|reform`: windows whose LLM step took its fallback (README "When the model
misbehaves"), and single messages passed over because no retry could extract them (a window that
did not fit was split down to them, docs/backlog.md); and re-forming one.

The list comes from the store, which records each such window with its memories
(memory/degraded.py) and keeps it until forget_user deletes its session; and, for windows that
degraded before the store kept them, from Temporal visibility: each degraded FormMemories run
carries the outcome attribute "degraded" and, in its memo, its newest windows (message ranges),
steps and reasons, until the namespace's retention deletes the run. A window in both is listed
once, as the store has it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from cli.common import (
    JsonOption,
    check_id,
    emit,
    fail,
    load_settings,
    progress,
    run,
    store_of,
    temporal_of,
)
from memory.degraded import DegradedKey, DegradedWindow
from memory.deps import open_deps
from memory.reform import Reformed, reform
from memory.settings import Settings
from memory.store import MemoryStore
from workflows.naming import FORM_WORKFLOW

app = typer.Typer(help="Windows formed degraded (a model's output stayed invalid), and re-forming.")

# The records of one (agent, session) read to tell which memo windows the store holds.
_SESSION_RECORDS = 10_000


def _query(agent: str | None, session: str | None) -> str:
    parts = [f'WorkflowType = "{FORM_WORKFLOW}"', 'MnemosOutcome = "degraded"']
    if agent:
        parts.append(f'MnemosAgentId = "{agent}"')
    if session:
        parts.append(f'MnemosSessionId = "{session}"')
    return " AND ".join(parts)


async def memo_windows(
    settings: Settings, agent: str | None, session: str | None, limit: int
) -> list[dict[str, Any]]:
    """The windows in the memos of the newest ``limit`` degraded runs (each keeps its newest
    windows only)."""
    client = await temporal_of(settings)
    rows: list[dict[str, Any]] = []
    async for run_ in client.list_workflows(_query(agent, session), limit=limit):
        _, agent_id, session_id = run_.id.split(":", 2)
        memo = await run_.memo()
        for window in memo.get("degraded", []):
            rows.append(
                {
                    "agent": agent_id,
                    "session": session_id,
                    "after_seq": window["after_seq"],
                    "upto_seq": window["upto_seq"],
                    "step": window["step"],
                    "reason": window["reason"],
                    "source": "memo",
                    "workflow_id": run_.id,
                    "run_id": run_.run_id,
                    "closed_at": run_.close_time,
                }
            )
    return rows


def _stored(w: DegradedWindow) -> dict[str, Any]:
    return {
        "agent": w.agent_id,
        "session": w.session_id,
        "after_seq": w.after_seq,
        "upto_seq": w.upto_seq,
        "step": w.step,
        "reason": w.reason,
        "source": "store",
        "formation_id": w.formation_id,
        "degraded_at": w.degraded_at,
        "reformed_at": w.reformed_at,
    }


def _key(row: dict[str, Any]) -> DegradedKey:
    return (row["agent"], row["session"], row["after_seq"], row["upto_seq"], row["step"])


async def degraded_windows(
    settings: Settings,
    agent: str | None,
    session: str | None,
    limit: int,
    *,
    include_reformed: bool = False,
    memos: bool = True,
) -> list[dict[str, Any]]:
    """The store's windows and the memos' the store does not hold, newest first (a memo's
    window by its run's close), at most ``limit``."""
    async with store_of(settings) as store:
        stored = await store.list_degraded(
            agent_id=agent, session_id=session, include_reformed=include_reformed, limit=limit
        )
        rows = [_stored(w) for w in stored]
        # Without the Mnemos search attributes no run is tagged "degraded" (and the query on
        # them is refused): the store's windows are all there is to list.
        if memos and settings.temporal.search_attributes:
            from_memos = await memo_windows(settings, agent, session, limit)
            held = await _held(store, {(r["agent"], r["session"]) for r in from_memos})
            rows += [r for r in from_memos if _key(r) not in held]
    oldest = datetime.min.replace(tzinfo=UTC)
    rows.sort(key=lambda r: r.get("degraded_at") or r.get("closed_at") or oldest, reverse=True)
    return rows[:limit]


async def _held(store: MemoryStore, sessions: set[tuple[str, str]]) -> set[DegradedKey]:
    """The keys the store holds in these (agent, session)s, re-formed ones too."""
    held: set[DegradedKey] = set()
    for agent_id, session_id in sorted(sessions):
        found = await store.list_degraded(
            agent_id=agent_id, session_id=session_id, include_reformed=True,
            limit=_SESSION_RECORDS,
        )  # fmt: skip
        held |= {w.key for w in found}
    return held


def _line(row: dict[str, Any]) -> str:
    """The arguments `degraded reform` takes to re-run it (its reflections too when they were
    the step passed over), then why."""
    also = " --reflections" if row["step"] == "extract_reflections" else ""
    done = " (re-formed)" if row.get("reformed_at") else ""
    return (
        f"{row['agent']} {row['session']} --after {row['after_seq']} --upto {row['upto_seq']}"
        f"{also}  {row['step']}{done}: {row['reason'][:160]}"
    )


@app.command("list")
def list_degraded(
    agent: Annotated[str | None, typer.Option(help="Only this agent's windows.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's windows.")] = None,
    limit: Annotated[
        int, typer.Option(min=1, help="Most recent windows to list (and runs whose memos to read).")
    ] = 100,
    include_reformed: Annotated[
        bool, typer.Option("--all", help="Also the windows re-formed since.")
    ] = False,
    memos: Annotated[
        bool,
        typer.Option(
            help="Also read the degraded runs' memos in Temporal: windows degraded before the "
            "store recorded them (--no-memos: the store only, no Temporal needed; also when "
            "MNEMOS_TEMPORAL__SEARCH_ATTRIBUTES is false)."
        ),
    ] = True,
    as_json: JsonOption = False,
) -> None:
    """Degraded windows, newest first, each as the arguments `degraded reform` takes.

    From the store, which records every degraded window with its memories until forget_user
    deletes its session (--json: "source": "store"); and from the memos of the degraded
    FormMemories runs in Temporal ("source": "memo"): windows degraded before the store
    recorded them, each run's newest 40, until the namespace's retention deletes the run. A
    memo's window the store holds is listed once, from the store. Re-formed windows
    (`degraded reform`) only with --all, and only the store's: a memo does not learn of it."""
    settings = load_settings()
    agent = check_id("agent", agent) if agent else None
    session = check_id("session", session) if session else None
    rows = run(
        degraded_windows(
            settings, agent, session, limit, include_reformed=include_reformed, memos=memos
        ),
        settings,
    )
    emit(
        rows,
        as_json=as_json,
        text=lambda: "\n".join(_line(r) for r in rows) or "no degraded windows",
    )


async def _reform(
    settings: Settings, agent: str, session: str, after: int, upto: int, reflections: bool
) -> Reformed:
    deps = await open_deps(settings)
    try:
        return await reform(deps, agent, session, after, upto, with_reflections=reflections)
    finally:
        await deps.close()


@app.command("reform")
def reform_command(
    agent: Annotated[str, typer.Argument(help="The agent id.")],
    session: Annotated[str, typer.Argument(help="The session id.")],
    after: Annotated[int, typer.Option(min=0, help="The window's first seq minus one.")],
    upto: Annotated[int, typer.Option(min=1, help="The window's last seq.")],
    reflections: Annotated[
        bool,
        typer.Option(
            help="Also extract the reflections again, of the windows whose reflection step fell "
            "back (a range the store holds no record of: its reflections alone)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Re-form one degraded window with the configured model, in this process: the steps the
    store recorded as fallen back within the range run again there, no other (a window whose
    facts were formed well does not have them formed, and stored, twice). Its facts are extracted
    and decided again against what was stored before the fallback's unmerged copies; the cursor
    stays. A range the store holds no record of (listed from a run's memo) is re-formed as asked:
    its facts, or with --reflections its reflections alone. A range the model cannot carry in one
    answer is split, down to one message. The store's records of the steps re-run within the
    parts re-formed are marked re-formed (`degraded list` leaves them out). Exit code 1 when the
    model's output is still unusable for any message, or nothing in the range is left to
    re-form."""
    agent, session = check_id("agent", agent), check_id("session", session)
    if after >= upto:
        fail(f"--after {after} --upto {upto}: an empty range (--after is below --upto)")
    settings = load_settings()
    with progress(f"re-forming messages {after + 1}-{upto} of {session}"):
        done = run(_reform(settings, agent, session, after, upto, reflections), settings)
    c = done.commit
    still = [f"{s.after_seq + 1}-{s.upto_seq}: {s.reason[:160]}" for s in done.still_degraded]
    steps = ", ".join(done.steps)
    emit(
        c.model_dump()
        | {"marked_reformed": done.marked}
        | ({"still_degraded": still} if still else {}),
        as_json=as_json,
        text=lambda: (
            f"re-formed messages {after + 1}-{upto}: facts +{c.facts_added} ~{c.facts_updated} "
            f"-{c.facts_invalidated} (duplicates {c.facts_duplicate}), "
            f"reflections +{c.reflections_added}; {done.marked} degraded record(s) of {steps} "
            "marked re-formed" + "".join(f"\nstill degraded: messages {line}" for line in still)
        ),
    )
    if still:
        raise typer.Exit(1)
