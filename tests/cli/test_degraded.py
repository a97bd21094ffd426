"""`mnemos degraded list|reform`: find a degraded window through Temporal visibility, re-form one."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

from temporalio.testing import WorkflowEnvironment
from typer.testing import CliRunner

from cli.app import app
from memory.deps import Deps
from memory.embedding import make_embedder
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.model_check import CheckReport, form_session
from memory.models import AgentConfig, FactFilter
from memory.settings import EmbeddingSettings, Settings, TemporalSettings
from memory.store.sqlite import SQLiteStore
from tests.harness import T0, Harness, conversation
from tests.store.test_reform import UndecidedHeuristic, said

runner = CliRunner()


def _cut_off(request: LLMRequest) -> None:
    from memory.errors import MalformedOutputError

    raise MalformedOutputError("output hit the token limit (finish_reason=length)")


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
    rows: list[dict[str, object]] = []
    for _ in range(100):  # visibility lags the close by a moment
        result = await asyncio.to_thread(
            runner.invoke, app, ["degraded", "list", "--session", session, "--json"], env=env
        )
        assert result.exit_code == 0, result.stdout + result.stderr
        if rows := json.loads(result.stdout):
            break
        await asyncio.sleep(0.1)
    assert [(r["agent"], r["session"], r["after_seq"], r["upto_seq"], r["step"]) for r in rows] == [
        ("eve", session, i, i + 1, "extract_facts") for i in range(4)
    ]
    assert "token limit" in str(rows[0]["reason"])
    text = await asyncio.to_thread(
        runner.invoke, app, ["degraded", "list", "--session", session], env=env
    )
    assert text.stdout.startswith(f"eve {session} --after 0 --upto 1  extract_facts:")


async def test_degraded_reform_converges_on_one_fact(tmp_path: Path) -> None:
    settings = Settings(embedding=EmbeddingSettings(provider="local"))
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    embedder = make_embedder(settings)
    broken = Deps(settings=settings, store=store, llm=UndecidedHeuristic(), embedder=embedder)
    good = Deps(settings=settings, store=store, llm=HeuristicProvider(), embedder=embedder)
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    for session, text, deps in [
        ("s0", "The festival budget is $50,000.", good),
        ("s1", "The festival budget is $65,000.", broken),
    ]:
        await store.record_messages(
            session, "eve", [said(int(session[1]), text)], weights={"user": 1.0},
            chars_per_token=4.0, now=T0,
        )  # fmt: skip
        await form_session(deps, "eve", session, CheckReport())
    await embedder.close()

    async def budgets() -> list[str]:
        # The valid facts (said on test_reform's day: not the context FIFO's "recent").
        valid = await store.list_facts(FactFilter(agent_id="eve", user_id="kay"), limit=100)
        return sorted(f.content for f in valid if "budget" in f.content)

    assert len(await budgets()) == 2
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
    assert await budgets() == ["The festival budget is $65,000."]
    await store.close()
