"""`mnemos degraded list|reform`: windows whose LLM step took its fallback (README "When the model
misbehaves"), and single messages passed over because no retry could extract them (a window that
did not fit was split down to them, docs/backlog.md); and re-forming one. The list comes from
Temporal visibility: each degraded FormMemories run carries the outcome attribute "degraded" and,
in its memo, the windows (message ranges), steps and reasons."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cli.common import JsonOption, check_id, emit, load_settings, progress, run, temporal_of
from memory.deps import open_deps
from memory.reform import Reformed, reform
from memory.settings import Settings
from workflows.naming import FORM_WORKFLOW

app = typer.Typer(help="Windows formed degraded (a model's output stayed invalid), and re-forming.")


def _query(agent: str | None, session: str | None) -> str:
    parts = [f'WorkflowType = "{FORM_WORKFLOW}"', 'MnemosOutcome = "degraded"']
    if agent:
        parts.append(f'MnemosAgentId = "{agent}"')
    if session:
        parts.append(f'MnemosSessionId = "{session}"')
    return " AND ".join(parts)


async def degraded_windows(
    settings: Settings, agent: str | None, session: str | None, limit: int
) -> list[dict[str, Any]]:
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
                    "workflow_id": run_.id,
                    "run_id": run_.run_id,
                    "closed_at": run_.close_time,
                }
            )
    return rows


def _line(row: dict[str, Any]) -> str:
    """The arguments `degraded reform` takes to re-run it (its reflections too when they were
    the step passed over), then why."""
    also = " --reflections" if row["step"] == "extract_reflections" else ""
    return (
        f"{row['agent']} {row['session']} --after {row['after_seq']} --upto {row['upto_seq']}"
        f"{also}  {row['step']}: {row['reason'][:160]}"
    )


@app.command("list")
def list_degraded(
    agent: Annotated[str | None, typer.Option(help="Only this agent's windows.")] = None,
    session: Annotated[str | None, typer.Option(help="Only this session's windows.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most recent runs to look at.")] = 100,
    as_json: JsonOption = False,
) -> None:
    """Degraded windows, newest run first, each as the arguments `degraded reform` takes."""
    settings = load_settings()
    agent = check_id("agent", agent) if agent else None
    session = check_id("session", session) if session else None
    rows = run(degraded_windows(settings, agent, session, limit), settings)
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
        bool, typer.Option(help="Also extract the window's reflections again.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Re-form one degraded window with the configured model, in this process: its facts are
    extracted and decided again against what was stored before the fallback's unmerged copies;
    the cursor stays. A range the model cannot carry in one answer is split, down to one message.
    Exit code 1 when the model's output is still unusable for any message."""
    settings = load_settings()
    agent, session = check_id("agent", agent), check_id("session", session)
    with progress(f"re-forming messages {after + 1}-{upto} of {session}"):
        done = run(_reform(settings, agent, session, after, upto, reflections), settings)
    c = done.commit
    still = [f"{s.after_seq + 1}-{s.upto_seq}: {s.reason[:160]}" for s in done.still_degraded]
    emit(
        c.model_dump() | {"still_degraded": still} if still else c,
        as_json=as_json,
        text=lambda: (
            f"re-formed messages {after + 1}-{upto}: facts +{c.facts_added} ~{c.facts_updated} "
            f"-{c.facts_invalidated} (duplicates {c.facts_duplicate}), "
            f"reflections +{c.reflections_added}"
            + "".join(f"\nstill degraded: messages {line}" for line in still)
        ),
    )
    if still:
        raise typer.Exit(1)
