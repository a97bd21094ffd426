"""A drain that continued as new reports everything it formed (workflows.form_versions
DRAIN_TOTALS): the result a caller reads (a session end, `mnemos form`, form_memories(wait=True))
is the last run's, and it counts the earlier runs too; each run's memo says what that run did.

The dev server here suggests continue-as-new after ten history events, so every window of the
drain is a run of its own."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError
from memory.llm.base import LLMRequest
from memory.models import ScopeKey
from memory.pipeline.types import CommitResult, Decision, LlmCall
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings, TemporalSettings
from tests.can_server import continuing_as_new
from tests.harness import Harness, conversation, facts
from workflows import drain
from workflows.drain import merged
from workflows.naming import formation_workflow_id
from workflows.summary import DEGRADED_LISTED, FormationSummary, calls_made


@pytest.fixture
async def can_env() -> AsyncIterator[WorkflowEnvironment]:
    """A dev server of its own that suggests continue-as-new after ten history events."""
    async with continuing_as_new() as env:
        yield env


async def _bench(env: WorkflowEnvironment, tmp_path: Path, formation: FormationSettings) -> Harness:
    temporal = TemporalSettings(
        address=env.client.service_client.config.target_host,
        task_queue=f"can-{uuid.uuid4().hex[:8]}",
        search_attributes=False,
        workflow_sandbox=True,
    )
    return await Harness.create(env, tmp_path, temporal=temporal, formation=formation)


async def _runs(h: Harness, env: WorkflowEnvironment) -> list[Mapping[str, Any]]:
    """The memo of every run of the session's formation, oldest first.

    Walked back from the latest run through each run's history (its start event names the run it
    continued), and each memo read by describe: both read the run itself. Listing the runs read
    visibility, which lags: a run's memo could be listed before its last upsert reached it."""
    workflow_id = formation_workflow_id(h.agent.agent_id, "s1")
    memos: list[Mapping[str, Any]] = []
    run_id: str | None = None
    statuses: set[WorkflowExecutionStatus | None] = set()
    while True:
        handle = env.client.get_workflow_handle(workflow_id, run_id=run_id)
        described = await handle.describe()
        statuses.add(described.status)
        memos.append(await described.memo())
        history = await env.client.get_workflow_handle(
            workflow_id, run_id=described.run_id
        ).fetch_history()
        started = history.events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            break
        run_id = started.continued_execution_run_id
    assert WorkflowExecutionStatus.CONTINUED_AS_NEW in statuses  # the case
    return memos[::-1]


async def test_a_session_end_reports_every_message_its_drain_formed(
    can_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await _bench(can_env, tmp_path, FormationSettings(min_messages=4, max_messages_per_run=4))
    await h.record("s1", conversation(12))  # three windows of four
    async with h.worker():
        ended = await asyncio.wait_for(h.memory.on_session_end("eve", "s1"), timeout=120)
        memos = await _runs(h, can_env)

    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 12
    # It used to say 4: what the drain's last run formed.
    assert ended.formation.messages_formed == 12
    assert ended.formation.formations == 3
    # Each run's memo says what that run itself formed: together, the drain.
    assert sum(int(str(m["messages_formed"])) for m in memos) == 12
    assert all(int(str(m["messages_formed"])) <= 4 for m in memos)


async def test_mnemos_form_reports_its_drain_when_a_turn_triggers_during_the_last_window(
    can_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """`mnemos form` / form_memories(wait=True): a turn's unforced trigger during the drain's last
    window makes one more run, which forms nothing; the result used to be that run's ("Nothing new
    to form.")."""
    h = await _bench(
        can_env,
        tmp_path,
        FormationSettings(min_messages=4, message_interval=40, max_messages_per_run=4),
    )
    third, go_on = asyncio.Event(), asyncio.Event()
    calls = 0

    async def held_third(_: LLMRequest) -> ExtractedFacts:
        nonlocal calls
        calls += 1
        if calls == 3:
            third.set()
            await go_on.wait()
        return facts()

    h.llm.defaults["extract_facts"] = held_third
    await h.record("s1", conversation(12))
    async with h.worker():
        run = await h.start("s1", force=True)  # `mnemos form s1`
        await asyncio.wait_for(third.wait(), 60)  # the last window is being formed
        await h.start("s1", force=False)  # a turn's trigger (another replica's)
        go_on.set()
        summary = await asyncio.wait_for(run.result(), 60)
        memos = await _runs(h, can_env)

    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 12
    assert (summary.formations, summary.messages_formed) == (3, 12)
    assert "3 formation(s), 12 messages" in str(summary.memo()["summary"])
    assert memos[-1]["formations"] == 0  # the last run's own memo: it formed nothing itself


def _refuses_message_3(request: LLMRequest) -> ExtractedFacts:
    if "message 2 from" in str(request.task_input):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return facts()


async def test_a_split_goes_back_to_whole_windows_in_a_later_run_of_the_drain(
    can_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The split in progress is carried to the next run with the totals: message 3 refused in
    the first window of four, each pass a run of its own, the drain reads windows of four again
    once message 4 formed alone (it used to read the other eight messages one by one)."""
    h = await _bench(can_env, tmp_path, FormationSettings(min_messages=4, max_messages_per_run=4))
    h.llm.defaults["extract_facts"] = _refuses_message_3
    await h.record("s1", conversation(12))
    async with h.worker():
        summary = await h.form("s1")
        memos = await _runs(h, can_env)

    assert len(memos) >= 5  # every window a run of its own
    # 1-4 split, 1-2, 3 passed over, 4 alone, then 5-8 and 9-12.
    assert (summary.splits, summary.passed_over, summary.formations) == (2, 1, 5)
    assert summary.messages_formed == 12


def _run(n: int) -> FormationSummary:
    """A run's summary: ``n`` of everything, one commit of four messages."""
    call = LlmCall(task="extract_facts", provider="p", model="m", input_tokens=5, output_tokens=2)
    run = FormationSummary(
        splits=n, passed_over=n, duration_ms=10 * n, llm_calls=[call] * n, decisions_redone=n
    )
    run.add_degraded(n, n + 1, "extract_facts", "refused")
    run.add_decisions([Decision(new_index=0, event="ADD", reasoning="new")] * n)
    key = ScopeKey.session("eve", "s1")
    commit = CommitResult(
        already_committed=False,
        facts_added=n,
        facts_updated=n,
        facts_invalidated=n,
        facts_duplicate=n,
        reflections_added=n,
        due_for_consolidation=[key],
    )
    run.add_commit(4, commit)
    return run


def test_a_drain_summary_adds_up_every_field_of_its_runs() -> None:
    """Field by field, so a field added to the summary later is counted across runs too."""
    one, two = _run(1), _run(2)

    total = merged(one.model_dump(mode="json"), two)  # as continue-as-new carries it

    for name, value in two:
        if isinstance(value, int):
            assert getattr(total, name) == getattr(one, name) + value, name
    assert (total.formations, total.messages_formed, total.facts_added) == (2, 8, 3)
    assert calls_made(total.llm_calls) == 3 and total.decisions == {"ADD": 3}
    assert [(c.count, c.input_tokens, c.output_tokens) for c in total.llm_calls] == [(3, 15, 6)]
    assert [d.after_seq for d in total.degraded] == [1, 2]
    assert total.consolidations_requested == one.consolidations_requested  # a key once
    assert merged(None, two) is two  # a run that did not continue from another


async def test_a_drains_result_tallies_its_llm_calls_per_task_and_model(
    can_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """What a drain carries from run to run, and returns, holds its LLM calls tallied: one entry
    per task, provider and model counting the calls of every run (it held one entry per call, so
    a long drain's carry outgrew Temporal's payload limit)."""
    h = await _bench(can_env, tmp_path, FormationSettings(min_messages=4, max_messages_per_run=4))
    await h.record("s1", conversation(12))  # three windows of four, a run each
    async with h.worker():
        summary = await h.form("s1")
        memos = await _runs(h, can_env)

    asked = Counter(r.task for r in h.llm.requests if r.task != "consolidate")
    assert len(memos) >= 3 and summary.messages_formed == 12
    assert sorted(c.task for c in summary.llm_calls) == sorted(asked)  # each task once
    assert {c.task: c.count for c in summary.llm_calls} == asked
    assert sum(c.input_tokens for c in summary.llm_calls) == sum(
        int(str(m["tokens_in"])) for m in memos
    )
    assert f"LLM calls {asked.total()} (" in str(summary.memo()["summary"])


def _busy_run(windows: int, degraded: bool) -> FormationSummary:
    """A run of a long drain: ``windows`` windows of 45 messages, three LLM calls each, each
    window degraded or none (a run continues as new after ~160 windows)."""
    run = FormationSummary()
    for w in range(windows):
        run.formations += 1
        run.messages_formed += 45
        for task in ("extract_facts", "decide_fact_changes", "extract_reflections"):
            run.llm_calls.append(
                LlmCall(
                    task=task,
                    provider="openai",
                    model="gpt-4o-mini-2024-07-18",
                    input_tokens=3456,
                    output_tokens=789,
                )
            )
        if degraded:
            run.add_degraded(w * 45, w * 45 + 45, "decide_fact_changes", "x" * 300)
    return run


@pytest.mark.parametrize("degraded", [False, True], ids=["formed", "degraded"])
@pytest.mark.parametrize("runs", [1, 14, 21, 200])  # 14: 100k messages; 21: 150k; 200: 1.4M
def test_what_a_drain_carries_stays_small_however_long_it_runs(runs: int, degraded: bool) -> None:
    """Each run continues as new carrying the drain's totals so far (FormationRequest.drained):
    they used to hold every LLM call and degraded step of every earlier run, 887 KB after a 100k
    message backlog (Temporal warns at 512 KB) and 2.58 MB after a degraded 150k one (over its
    2 MB limit: the continue-as-new is refused and the drain stops). Counted as before."""
    windows = 160
    carried: dict[str, object] | None = None
    for _ in range(runs):
        carried = drain.carried(carried, _busy_run(windows, degraded))
        assert len(json.dumps(carried)) < 64_000

    total = merged(carried, FormationSummary())  # the last run's result, having formed nothing
    assert total.messages_formed == runs * windows * 45
    assert calls_made(total.llm_calls) == runs * windows * 3
    assert sum(c.input_tokens for c in total.llm_calls) == runs * windows * 3 * 3456
    assert total.degraded_steps == (runs * windows if degraded else 0)
    assert len(total.degraded) == (min(runs * windows, DEGRADED_LISTED) if degraded else 0)
    if degraded:  # the newest listed, as the memo lists them
        assert total.degraded[-1].after_seq == (windows - 1) * 45
        assert f"DEGRADED ({runs * windows} step(s)" in str(total.memo()["summary"])
