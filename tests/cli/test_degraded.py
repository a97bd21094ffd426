"""`mnemos degraded list|reform`: find a degraded window in the store (and, degraded before the
store recorded them, through Temporal visibility), re-form one and see it marked re-formed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli.app import app
from memory.degraded import DegradedWindow
from memory.deps import Deps
from memory.embedding import make_embedder
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, FactFilter
from memory.settings import EmbeddingSettings, Settings, TemporalSettings
from memory.store.sqlite import SQLiteStore
from tests.cli.conftest import free_port
from tests.harness import T0, Harness, conversation
from tests.store.builders import at, commit, msg, record
from tests.store.test_contract_degraded import recording, with_degraded
from tests.store.test_reform import UndecidedHeuristic, said

runner = CliRunner()


def _cut_off(request: LLMRequest) -> None:
    from memory.errors import MalformedOutputError

    raise MalformedOutputError("output hit the token limit (finish_reason=length)")


def _window(agent: str, session: str, after: int, step: str, when: datetime) -> DegradedWindow:
    """A window's degraded step as the formation's commit records it."""
    return DegradedWindow(
        agent_id=agent, session_id=session, after_seq=after, upto_seq=after + 1, step=step,
        reason="output hit the token limit", formation_id=f"{agent}:{session}:{after}",
        degraded_at=when,
    )  # fmt: skip


async def test_degraded_list_names_the_window_its_step_and_why(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    queue = f"tq-{uuid.uuid4().hex[:8]}"
    h = await Harness.create(
        dev_env, tmp_path, temporal=TemporalSettings(task_queue=queue, search_attributes=True)
    )
    session = f"s-{uuid.uuid4().hex[:8]}"
    await h.record(session, conversation(4))
    h.llm.defaults["extract_facts"] = _cut_off
    async with h.worker():
        summary = await h.form(session)
    # Split down to single messages, each passed over.
    assert [d.step for d in summary.degraded] == ["extract_facts"] * 4

    env = {
        "MNEMOS_TEMPORAL__ADDRESS": dev_env.client.service_client.config.target_host,
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_LOG_LEVEL": "warning",
    }
    args = ["degraded", "list", "--session", session, "--json"]
    # The windows as a store that had not recorded them sees them (degraded before it did):
    # from the run's memo, once visibility has it (it lags the close by a moment).
    older = env | {"MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "older.db")}
    sqlite3.connect(tmp_path / "older.db").close()
    memo: list[dict[str, object]] = []
    for _ in range(100):
        result = await asyncio.to_thread(runner.invoke, app, args, env=older)
        assert result.exit_code == 0, result.stdout + result.stderr
        if memo := json.loads(result.stdout):
            break
        await asyncio.sleep(0.1)
    assert [(r["after_seq"], r["source"]) for r in memo] == [(i, "memo") for i in range(4)]

    # The store recorded each window with its memories: listed once, newest first, from it.
    result = await asyncio.to_thread(runner.invoke, app, args, env=env)
    assert result.exit_code == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout)
    assert [(r["agent"], r["session"], r["after_seq"], r["upto_seq"], r["step"]) for r in rows] == [
        ("eve", session, i, i + 1, "extract_facts") for i in reversed(range(4))
    ]
    assert {r["source"] for r in rows} == {"store"}
    assert "token limit" in str(rows[0]["reason"])
    text = await asyncio.to_thread(
        runner.invoke, app, ["degraded", "list", "--session", session], env=env
    )
    assert text.stdout.startswith(f"eve {session} --after 3 --upto 4  extract_facts:")


async def test_degraded_list_reads_every_window_the_store_recorded(tmp_path: Path) -> None:
    """41 windows of one long run (its memo keeps the newest 40), listed from the store alone:
    no run needed (it failed, or retention deleted it)."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await record(store, "s1", "a1", [msg(f"m{i}", seconds=i) for i in range(41)])
    windows = [_window("a1", "s1", i, "extract_facts", at(200 + i)) for i in range(41)]
    await store.commit_formation(with_degraded(commit(new_cursor=41), *windows))
    await store.close()
    env = {"MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"), "MNEMOS_LOG_LEVEL": "warning"}

    args = ["degraded", "list", "--no-memos", "--json"]
    result = await asyncio.to_thread(runner.invoke, app, args, env=env)

    assert result.exit_code == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout)
    assert [r["after_seq"] for r in rows] == list(reversed(range(41)))
    assert rows[0]["formation_id"] == "a1:s1:40" and rows[0]["reformed_at"] is None


async def test_degraded_list_without_search_attributes_lists_the_store_alone(
    tmp_path: Path,
) -> None:
    """Runs are not tagged when the Mnemos search attributes are off: no query for them, and no
    Temporal needed to list what the store recorded."""
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await record(store, "s1", "a1", [msg(f"m{i}", seconds=i) for i in range(2)])
    await store.commit_formation(
        with_degraded(commit(new_cursor=2), _window("a1", "s1", 0, "extract_facts", at(200)))
    )
    await store.close()
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_TEMPORAL__SEARCH_ATTRIBUTES": "false",
        "MNEMOS_TEMPORAL__ADDRESS": f"127.0.0.1:{free_port()}",  # nothing listens
        "MNEMOS_LOG_LEVEL": "warning",
    }
    result = await asyncio.to_thread(runner.invoke, app, ["degraded", "list", "--json"], env=env)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert [r["after_seq"] for r in json.loads(result.stdout)] == [0]


async def test_degraded_reform_converges_on_one_fact(tmp_path: Path) -> None:
    settings = Settings(embedding=EmbeddingSettings(provider="local"))
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    embedder = make_embedder(settings)
    broken = Deps(settings=settings, store=store, llm=UndecidedHeuristic(), embedder=embedder)
    good = Deps(settings=settings, store=store, llm=HeuristicProvider(), embedder=embedder)
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    # The decide step's fallback in s1, recorded by the formation's commit.
    recorded = recording(store, _window("eve", "s1", 0, "decide_fact_changes", T0))
    for session, text, deps in [
        ("s0", "The festival budget is $50,000.", good),
        ("s1", "The festival budget is $65,000.", broken),
    ]:
        await store.record_messages(
            session, "eve", [said(int(session[1]), text)], weights={"user": 1.0},
            chars_per_token=4.0, now=T0,
        )  # fmt: skip
        await form_session(replace(deps, store=recorded), "eve", session, CheckReport())
    await embedder.close()

    async def budgets() -> list[str]:
        # The valid facts (said on test_reform's day: not the context FIFO's "recent").
        valid = await store.list_facts(FactFilter(agent_id="eve", user_id="kay"), limit=100)
        return sorted(f.content for f in valid if "budget" in f.content)

    assert len(await budgets()) == 2
    [fallback] = await store.list_degraded()
    assert (fallback.session_id, fallback.step) == ("s1", "decide_fact_changes")
    env = {
        "MNEMOS_STORE__SQLITE_PATH": str(tmp_path / "mnemos.db"),
        "MNEMOS_MODELS__PROVIDER": "heuristic",
        "MNEMOS_EMBEDDING__PROVIDER": "local",
        "MNEMOS_LOG_LEVEL": "warning",
    }
    args = ["degraded", "reform", "eve", "s1", "--after", "0", "--upto", "1"]
    result = await asyncio.to_thread(runner.invoke, app, args, env=env)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("re-formed messages 1-1:")
    assert "1 degraded record(s) of extract_facts, decide_fact_changes marked" in result.stdout
    assert await budgets() == ["The festival budget is $65,000."]
    await store.close()

    listed = ["degraded", "list", "--no-memos"]
    result = await asyncio.to_thread(runner.invoke, app, listed, env=env)
    assert result.stdout.strip() == "no degraded windows"
    result = await asyncio.to_thread(runner.invoke, app, [*listed, "--all", "--json"], env=env)
    [row] = json.loads(result.stdout)
    assert (row["session"], row["step"], row["reformed_at"] is not None) == (
        "s1", "decide_fact_changes", True,
    )  # fmt: skip
