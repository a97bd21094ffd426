"""Cold sessions and the session lifecycle on the real dev server (the time-skipping server has no
Schedules): the schedule a worker creates fires and forms a quiet session once, a manual trigger
forms only what is cold, a hot trigger racing a cold run forms each message once, a backlog longer
than a page drains over continued runs with a failing session's formation failing on its own run and
retried by the next job run, and the end of a session consolidates its memory, which the scheduled
job purges after the retention period. The job starts formations and does not wait for them."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import (
    Client,
    ScheduleOverlapPolicy,
    WorkflowExecutionStatus,
    WorkflowFailureError,
)
from temporalio.exceptions import ActivityError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError, UnusableOutputError
from memory.llm.base import LLMRequest
from memory.models import MessageIn
from memory.prompts.consolidate import ConsolidatedSections, ConsolidateInput
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings, SessionSettings, Settings, TemporalSettings
from runtime.schedule import (
    describe_schedule,
    ensure_schedule,
    pause_schedule,
    trigger_schedule,
)
from tests.fakes import echo_consolidation, facts_input, permanent
from tests.harness import Harness, facts, gate_first_extraction, reflections
from tests.workflows.test_end_session_again import _formations_asked
from worker import run_worker
from workflows.cold_sessions import ColdSessionsInput, ColdSessionsResult
from workflows.naming import (
    COLD_SESSIONS_WORKFLOW,
    OUTCOME,
    formation_workflow_id,
    session_end_workflow_id,
)
from workflows.summary import SessionEndSummary


def chat(session: str, n: int, *, minutes_ago: float, user: str = "alice") -> list[MessageIn]:
    """``n`` messages of a session, the last one ``minutes_ago`` minutes before now."""
    last = datetime.now(UTC) - timedelta(minutes=minutes_ago)
    return [
        MessageIn(
            message_id=f"{session}-{i}",
            role="user" if i % 2 == 0 else "agent",
            content=f"{session} message {i}",
            created_at=last - timedelta(seconds=n - 1 - i),
            user_id=user if i % 2 == 0 else None,
        )
        for i in range(n)
    ]


async def until[T](probe: Callable[[], Awaitable[T]], what: str, within: float = 30) -> T:
    """Poll the server (or the store) until ``probe`` returns something truthy."""
    deadline = time.monotonic() + within
    while not (value := await probe()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not reached in {within}s")
        await asyncio.sleep(0.05)
    return value


async def harness(env: WorkflowEnvironment, tmp_path: Path, **overrides: Any) -> Harness:
    temporal = TemporalSettings(
        address=env.client.service_client.config.target_host,
        task_queue=f"cold-{uuid.uuid4().hex[:8]}",
        search_attributes=True,
    )
    return await Harness.create(env, tmp_path, temporal=temporal, **overrides)


async def formation_result(h: Harness, session: str) -> Any:
    """The result of the session's formation run (which the job started and did not wait for)."""
    handle = h.client.get_workflow_handle(formation_workflow_id("eve", session))
    return await asyncio.wait_for(handle.result(), 60)


async def formations(h: Harness, session: str) -> int:
    state = await h.store.get_session_agent_state(session, "eve")
    assert state is not None
    return state.formations


async def test_worker_start_creates_the_schedule_which_fires_and_forms_a_cold_session_once(
    dev_env: WorkflowEnvironment, tmp_path: Path, cleanup: list[tuple[Client, Settings]]
) -> None:
    h = await harness(dev_env, tmp_path, sessions=SessionSettings(cold_scan_every_minutes=1 / 60))
    cleanup.append((h.client, h.settings))
    await h.record("quiet", chat("quiet", 4, minutes_ago=60))
    stop = asyncio.Event()
    worker = asyncio.create_task(run_worker(h.settings, stop, deps=h.deps))
    try:
        desc = await until(
            lambda: _describe_if_exists(h.client, h.settings), "schedule created by the worker"
        )
        assert desc.schedule.policy.overlap == ScheduleOverlapPolicy.SKIP
        assert [i.every for i in desc.schedule.spec.intervals] == [timedelta(seconds=1)]
        await until(lambda: formations(h, "quiet"), "cold session formed by a scheduled run")
        fired = (await describe_schedule(h.client, h.settings)).info.num_actions

        async def fired_twice_more() -> bool:
            info = (await describe_schedule(h.client, h.settings)).info
            return info.num_actions >= fired + 2 and not info.running_actions

        await until(fired_twice_more, "two more scheduled runs")
        formed = await formations(h, "quiet")
    finally:
        stop.set()
        await worker  # closes the store: the worker owns its deps
    assert formed == 1
    assert len(h.llm.calls("extract_facts")) == 1  # later runs found nothing cold


async def _describe_if_exists(client: Client, settings: Settings) -> Any:
    try:
        return await describe_schedule(client, settings)
    except RPCError:  # not created yet
        return None


async def test_manual_trigger_forms_cold_sessions_and_leaves_the_others_alone(
    dev_env: WorkflowEnvironment, tmp_path: Path, cleanup: list[tuple[Client, Settings]]
) -> None:
    h = await harness(dev_env, tmp_path)
    cleanup.append((h.client, h.settings))
    await h.record("idle", chat("idle", 4, minutes_ago=11))
    await h.record("talking", chat("talking", 4, minutes_ago=1))  # not idle long enough
    await h.record("short", chat("short", 2, minutes_ago=30))  # too little to form yet
    # As little, but quiet for longer than sessions.form_rest_after_minutes (60): what is left of a
    # session never ended forms however little (h231 D1: it never did).
    await h.record("rested", chat("rested", 2, minutes_ago=90))
    long = chat("long", 1, minutes_ago=60)[0].model_copy(update={"content": "tea " * 1600})
    await h.record("long", [long])  # one message, but ≥ 1500 weighted tokens

    assert await ensure_schedule(h.client, h.settings) == "created"
    assert await ensure_schedule(h.client, h.settings) == "unchanged"
    slower = h.settings.model_copy(update={"sessions": SessionSettings(cold_scan_every_minutes=7)})
    await pause_schedule(h.client, h.settings)
    assert await ensure_schedule(h.client, slower) == "updated"
    desc = await describe_schedule(h.client, h.settings)
    assert desc.schedule.state.paused  # an operator's pause survives an update
    assert [i.every for i in desc.schedule.spec.intervals] == [timedelta(minutes=7)]
    assert await ensure_schedule(h.client, h.settings) == "updated"

    async with h.worker():
        run = await trigger_schedule(h.client, h.settings)
        result = await asyncio.wait_for(run.result(), 60)
        for session in ("idle", "long", "rested"):
            await formation_result(h, session)
    assert (result.sessions, result.started, result.failed) == (3, 3, 0)
    sessions = ("idle", "long", "rested", "talking", "short")
    assert {s: await formations(h, s) for s in sessions} == {
        "idle": 1,
        "long": 1,
        "rested": 1,
        "talking": 0,
        "short": 0,
    }
    rested = await h.store.get_session_agent_state("rested", "eve")
    assert rested is not None and (rested.cursor_seq, rested.pending_messages) == (2, 0)
    talking = await h.store.get_session_agent_state("talking", "eve")
    assert talking is not None and talking.pending_messages == 4


async def test_a_hot_trigger_racing_a_cold_run_forms_each_message_once(
    dev_env: WorkflowEnvironment, tmp_path: Path, cleanup: list[tuple[Client, Settings]]
) -> None:
    h = await harness(dev_env, tmp_path, formation=FormationSettings(message_interval=4))
    cleanup.append((h.client, h.settings))
    gate = gate_first_extraction(h)
    messages = chat("s1", 8, minutes_ago=30)
    await h.record("s1", messages[:4])
    await ensure_schedule(h.client, h.settings)
    async with h.worker():
        hot = await h.memory.maybe_form_memories("eve", "s1")
        await gate.entered.wait()  # the hot run is inside extract_facts of messages 1-4
        await h.record("s1", messages[4:])  # still idle for the cold job: sent 30 minutes ago
        cold = await trigger_schedule(h.client, h.settings)
        formation = h.client.get_workflow_handle(formation_workflow_id("eve", "s1"))

        async def cold_request_arrived() -> bool:
            # Both starts are signal-with-start: the hot one's signal, then the cold one's.
            history = await formation.fetch_history()
            signals = [
                e
                for e in history.events
                if e.HasField("workflow_execution_signaled_event_attributes")
            ]
            return len(signals) == 2

        await until(cold_request_arrived, "the cold run's request reaching the hot run")
        gate.release.set()
        result = await asyncio.wait_for(cold.result(), 60)
        summary = await formation.result()
    assert hot.started
    seqs = [[m.seq for m in facts_input(r).messages] for r in h.llm.calls("extract_facts")]
    assert seqs == [[1, 2, 3, 4], [5, 6, 7, 8]]  # each message formed once, in order
    assert summary["formations"] == 2
    assert (result.sessions, result.started, result.failed) == (1, 1, 0)
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 8 and state.formations == 2


async def test_a_backlog_longer_than_a_page_drains_over_runs_and_a_failure_is_retried(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await harness(dev_env, tmp_path, sessions=SessionSettings(cold_page_size=2))
    sessions = ["b0", "bad", "b1"]
    for i, s in enumerate(sessions):
        await h.record(s, chat(s, 4, minutes_ago=60 - i))
    broken = True

    def extract(request: LLMRequest) -> ExtractedFacts:
        if broken and "bad message" in facts_input(request).messages[0].content:
            raise permanent()
        return facts()

    h.llm.defaults["extract_facts"] = extract
    # One page per run: the second page is read by a continued-as-new run. (Temporal delays a
    # run that follows a run shorter than a second by the rest of that second.)
    inp = ColdSessionsInput.from_settings(h.settings).model_copy(update={"pages_per_run": 1})

    async def run_job(n: int) -> tuple[ColdSessionsResult, Any]:
        handle = await h.client.start_workflow(
            COLD_SESSIONS_WORKFLOW,
            inp,
            id=f"cold-test-{uuid.uuid4().hex[:6]}-{n}",
            task_queue=h.settings.temporal.task_queue,
            result_type=ColdSessionsResult,
        )
        result = await asyncio.wait_for(handle.result(), 60)
        return result, await h.client.get_workflow_handle(handle.id).describe()

    async with h.worker():
        first, described = await run_job(1)
        for session in ("b0", "b1"):
            await formation_result(h, session)
        with pytest.raises(WorkflowFailureError) as failed:
            await formation_result(h, "bad")
        bad_run = await h.client.get_workflow_handle(formation_workflow_id("eve", "bad")).describe()
        broken = False
        second, _ = await run_job(2)
        await formation_result(h, "bad")
    # 3 sessions in pages of 2, each page in its own run.
    assert (first.runs, first.pages, first.sessions) == (2, 2, 3)
    assert (first.started, first.failed, first.failures) == (3, 0, [])  # every start succeeded
    # The formation's own failure is on its own run, visible in the UI.
    assert bad_run.status == WorkflowExecutionStatus.FAILED
    activity_error = failed.value.cause  # workflow <- activity <- provider
    assert isinstance(activity_error, ActivityError)
    assert "bad request" in str(activity_error.cause)
    assert described.typed_search_attributes.get(OUTCOME) == "ok"
    assert (await described.memo())["failed"] == 0
    assert (second.sessions, second.started, second.failed) == (1, 1, 0)  # retried next run
    assert {s: await formations(h, s) for s in sessions} == dict.fromkeys(sessions, 1)


async def test_session_end_consolidates_the_session_scope_and_the_job_purges_it_later(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    # A retention of ~0.1 ms: the session is past it as soon as it ends.
    h = await harness(dev_env, tmp_path, sessions=SessionSettings(ended_retention_days=1e-9))
    memory = h.memory
    assert await memory.on_session_start("eve", "s1", user_id="alice") == ""  # no messages yet
    h.llm.defaults["extract_facts"] = facts(("Alice drinks green tea", "user"))
    h.llm.defaults["extract_reflections"] = reflections(session=["the user is planning a trip"])
    await h.record("s1", chat("s1", 2, minutes_ago=0))  # below every threshold
    async with h.worker():
        ended = await memory.on_session_end("eve", "s1")
        context = await memory.on_session_start("eve", "s1", user_id="alice")
        next_session = await memory.on_session_start("eve", "s2", user_id="alice")
        purge = await h.cold_run()
    assert ended.formation.formations == 1
    assert (ended.consolidation.consolidations, ended.consolidation.absorbed) == (1, 1)
    session = await h.store.get_session("s1", "eve")  # ending is the agent's (#11)
    assert session is not None and session.ended_at is not None
    assert "<SessionMemory>" in context and "the user is planning a trip" in context
    assert "Alice drinks green tea" in next_session and "<SessionMemory>" not in next_session
    assert purge.purged == 1
    assert await h.store.get_consolidated(h.key("session", "s1")) is None
    assert await h.buffered(h.key("session", "s1")) == []


async def test_an_ended_session_resumed_is_finished_once_quiet_not_while_hot(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Two sessions ended an hour ago, then resumed: one message said now in the one whose end
    formed and consolidated it, one 20 minutes ago in the one whose end never ran. Recording
    leaves a session ended, yet the job finishes the quiet one only: the user still talking in
    the other is not force-formed (and force-consolidated) message by message, every run, until
    it goes quiet too."""
    h = await harness(dev_env, tmp_path)
    an_hour_ago = datetime.now(UTC) - timedelta(minutes=59)
    for session in ("hot", "quiet"):
        await h.record(session, chat(session, 4, minutes_ago=60))
    async with h.worker():
        await h.memory.on_session_end("eve", "hot")
        for session in ("hot", "quiet"):  # ended when it was said (the quiet one's never ran)
            await h.store.end_session(session, "eve", an_hour_ago)
        await h.record("hot", chat("hot-again", 1, minutes_ago=0))
        await h.record("quiet", chat("quiet-again", 1, minutes_ago=20))
        run = await h.cold_run()
        quiet_end = h.client.get_workflow_handle(
            session_end_workflow_id("eve", "quiet"), result_type=SessionEndSummary
        )
        await asyncio.wait_for(quiet_end.result(), 60)
    hot = await h.store.get_session_agent_state("hot", "eve")
    quiet = await h.store.get_session_agent_state("quiet", "eve")
    assert run.ends_started == 1, run.summary()
    assert hot is not None and hot.pending_messages == 1  # waits for the session to go quiet
    # The quiet one is cold too: the job's cold formation or its end's, whichever runs first,
    # forms its five messages, once.
    assert quiet is not None and (quiet.cursor_seq, quiet.pending_messages) == (5, 0)
    assert quiet.formations == 1


def _unusable(_: LLMRequest) -> ConsolidatedSections:
    raise UnusableOutputError("draft over the word limit, the same way twice")


async def test_an_end_that_gave_up_is_redrafted_only_once_something_is_said_again(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The session reflection of an ended session that no draft can take stays buffered: its
    end gave up, visibly. The job does not restart that end, which drafted it again, paid, every
    5 minutes for the 30 days the session is kept; a message recorded in the session since the
    end makes it due again (once quiet: here at once, the cut a moment ago), and so does a
    reflection another formation buffered since (its messages formed, none left unformed)."""
    h = await harness(dev_env, tmp_path, sessions=SessionSettings(cold_after_minutes=1e-9))
    h.llm.defaults["extract_facts"] = facts()
    h.llm.defaults["extract_reflections"] = reflections(session=["the user is planning a trip"])
    h.llm.defaults["consolidate"] = _unusable
    await h.record("s1", chat("s1", 4, minutes_ago=60))
    async with h.worker():
        gave_up = await h.memory.on_session_end("eve", "s1")
        # ended when it was said, an hour ago
        await h.store.end_session("s1", "eve", datetime.now(UTC) - timedelta(minutes=59))
        assert gave_up.consolidation.degraded and len(await h.buffered(h.key("session", "s1"))) == 1
        drafted = len(h.llm.calls("consolidate"))
        quiet = [await h.cold_run() for _ in range(3)]  # three scheduled firings
        assert [(r.ends_started, r.nothing_due) for r in quiet] == [(0, 1)] * 3
        assert len(h.llm.calls("consolidate")) == drafted  # no more paid drafts

        await h.record("s1", chat("s1-again", 1, minutes_ago=0))
        resumed = await h.cold_run()
        end = h.client.get_workflow_handle(
            session_end_workflow_id("eve", "s1"), result_type=SessionEndSummary
        )
        again = await asyncio.wait_for(end.result(), 60)
        settled = await h.cold_run()
        redrafted = len(h.llm.calls("consolidate"))
        h.llm.defaults["extract_reflections"] = reflections(session=["the user packs for it"])
        await h.record("s1", chat("s1-more", 4, minutes_ago=0))
        await asyncio.wait_for((await h.start("s1")).result(), 60)  # formed, not by the end
        buffered = len(await h.buffered(h.key("session", "s1")))
        formed_elsewhere = await h.cold_run()
        await asyncio.wait_for(end.result(), 60)  # the end it restarted
    assert resumed.ends_started == 1 and again.formation.messages_formed == 1
    assert len(h.llm.calls("consolidate")) > drafted  # the buffer, grown, drafted once more
    assert (settled.ends_started, settled.nothing_due) == (0, 1)
    assert buffered == 2  # below the session threshold: the formation asked no consolidation
    assert (formed_elsewhere.ends_started, formed_elsewhere.nothing_due) == (1, 0)
    assert len(h.llm.calls("consolidate")) > redrafted


def _refuses_forbidden(request: LLMRequest) -> ConsolidatedSections:
    """A content filter that refuses one reflection's text."""
    p = request.task_input
    assert isinstance(p, ConsolidateInput)
    if any("forbidden" in r for r in p.reflections):
        raise InputRefusedError("refused by the content filter", provider="fake")
    return echo_consolidation(request)


async def test_a_corrected_set_aside_reflection_of_an_ended_session_is_consolidated(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The provider refused the session reflection at the end: set aside. A person corrects it,
    which puts it back in the buffer for the next consolidation; the session has ended, so the
    cold job restarts its end, which consolidates it. Before, the correction kept the reflection's
    formed_at, older than the last consolidation: "nothing_due" every run until the purge."""
    h = await harness(dev_env, tmp_path)
    h.llm.defaults["extract_reflections"] = reflections(session=["forbidden words"])
    h.llm.defaults["consolidate"] = _refuses_forbidden
    key = h.key("session", "s1")
    await h.record("s1", chat("s1", 4, minutes_ago=60))
    async with h.worker():
        ended = await h.memory.on_session_end("eve", "s1")
        await h.store.end_session("s1", "eve", datetime.now(UTC) - timedelta(minutes=59))
        [aside] = ended.consolidation.set_aside
        await h.memory.manager.edit_reflection(key, aside, "the user said it politely")
        job = await h.cold_run()
        end = h.client.get_workflow_handle(
            session_end_workflow_id("eve", "s1"), result_type=SessionEndSummary
        )
        again = await asyncio.wait_for(end.result(), 60)
        settled = await h.cold_run()
    assert (job.ends_started, job.nothing_due) == (1, 0), job.summary()
    assert again.consolidation.absorbed == 1
    blob = await h.store.get_consolidated(key)
    assert blob is not None and "the user said it politely" in blob.content
    assert await h.buffered(key) == []
    assert settled.ends_started == 0


async def test_the_cold_job_leaves_a_running_end_alone(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """An ended session whose EndSession still runs (a slow model; an outage its consolidation
    waits out for up to two days) is counted still running, not signalled: each signal was one
    more round of forming and force-consolidating, one per run of the job, every 5 minutes, and
    the end did not answer while they came."""
    h = await harness(dev_env, tmp_path, sessions=SessionSettings(cold_after_minutes=1e-9))
    gate = gate_first_extraction(h)
    h.llm.defaults["extract_reflections"] = reflections(session=["Alice plans a trip"])
    await h.record("s1", chat("s1", 4, minutes_ago=60))
    async with h.worker():
        end = await h.memory.end_session("eve", "s1")
        await gate.entered.wait()  # the end's formation is in its first extraction
        await h.store.end_session("s1", "eve", datetime.now(UTC) - timedelta(minutes=59))
        tick = await h.cold_run()  # a scheduled run while the end runs
        gate.release.set()
        ended = await asyncio.wait_for(end.result(), 60)
        rounds = await _formations_asked(end)
    assert (tick.ends_started, tick.still_running) == (0, 1), tick.summary()
    assert rounds == 1
    assert ended.formation.messages_formed == 4 and ended.consolidation.absorbed == 1
