"""Issue #12 case 6, the cold job's part: an ended session whose end never ran (its messages
unformed, its session buffer not consolidated), or whose end completed before a message was
recorded (whatever its created_at), is finished by the cold-sessions job, which starts its
EndSession; and a transport error while starting is "try again later", not a failed session."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic_core import to_json
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.sessions import EndedPage, SessionActivities
from memory.models import MessageIn
from memory.settings import Settings, TemporalSettings
from tests.harness import T0, Harness, conversation, facts, reflections
from workflows.cold_sessions import ColdSessionsInput, ColdSessionsResult
from workflows.naming import session_end_workflow_id
from workflows.summary import SessionEndSummary


def chat(session: str, n: int, at: datetime) -> list[MessageIn]:
    return [
        MessageIn(
            message_id=f"{session}-{i}",
            role="user" if i % 2 == 0 else "agent",
            content=f"{session} message {i}",
            created_at=at + timedelta(seconds=i),
            user_id="alice" if i % 2 == 0 else None,
        )
        for i in range(n)
    ]


async def _harness(dev_env: WorkflowEnvironment, tmp_path: Path) -> Harness:
    """On the dev server (the job starts other workflows), a task queue of the test's own."""
    temporal = TemporalSettings(
        address=dev_env.client.service_client.config.target_host,
        task_queue=f"ended-{uuid.uuid4().hex[:8]}",
        search_attributes=False,
    )
    h = await Harness.create(dev_env, tmp_path, temporal=temporal)
    h.llm.defaults["extract_facts"] = facts(("Alice drinks green tea", "user"))
    h.llm.defaults["extract_reflections"] = reflections(session=["the user is planning a trip"])
    return h


async def test_cold_job_finishes_an_end_that_never_ran(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await _harness(dev_env, tmp_path)
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    await h.record("ended", chat("ended", 2, an_hour_ago))  # below every cold threshold
    # Quiet for half an hour: idle, but well inside sessions.form_rest_after_minutes (60), after
    # which even two messages form. Said an hour ago, it crossed that line once the job ran more
    # than a second after this line (always, on a loaded machine), and was formed.
    await h.record("open", chat("open", 2, datetime.now(UTC) - timedelta(minutes=30)))
    # The client marked the end in the store, then could not start the workflow.
    await h.store.end_session("ended", "eve", an_hour_ago + timedelta(minutes=1))

    async with h.worker():
        job = await h.cold_run()
        handle = h.client.get_workflow_handle(
            session_end_workflow_id("eve", "ended"), result_type=SessionEndSummary
        )
        ended = await asyncio.wait_for(handle.result(), 60)

    assert (job.ends_started, job.failed, job.retry_later) == (1, 0, 0)
    assert ended.formation.messages_formed == 2
    assert ended.consolidation.absorbed == 1
    assert await h.buffered(h.key("session", "ended")) == []
    blob = await h.store.get_consolidated(h.key("session", "ended"))
    assert blob is not None and "planning a trip" in blob.content
    still_open = await h.store.get_session_agent_state("open", "eve")
    assert still_open is not None and still_open.pending_messages == 2  # not ended: left alone


async def test_cold_job_finishes_every_page_of_ended_sessions(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Ended sessions past the first page are finished in the same run: before, one page a run
    was read from the start, so ends still running or failing there held back all others."""
    h = await _harness(dev_env, tmp_path)
    ended = [f"ended-{i}" for i in range(3)]
    for s in ended:
        await h.record(s, conversation(2, prefix=f"{s}-"))
        await h.store.end_session(s, "eve", T0 + timedelta(hours=1))
    inp = ColdSessionsInput.from_settings(h.settings)
    one_a_page = inp.sessions.model_copy(update={"cold_page_size": 1})
    # Two pages a run: the third page is read by the run it continued as.
    inp = inp.model_copy(update={"sessions": one_a_page, "pages_per_run": 2})

    async with h.worker():
        job = await h.cold_run(inp)
        for s in ended:
            await asyncio.wait_for(h.client.get_workflow_handle(end_id(s)).result(), 60)

    assert (job.ends_started, job.failed, job.retry_later) == (3, 0, 0)
    assert job.runs > 1
    unfinished = await h.store.list_unfinished_ended_sessions(
        ended_before=datetime.now(UTC), after=None, limit=10
    )
    assert unfinished == []


async def test_cold_job_forms_a_message_recorded_after_the_end_though_said_before_it(
    dev_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A turn delivered late (or sent by a client whose clock is behind) is recorded into a
    session after its end completed, with a created_at before that end started. The job restarts
    the end, which forms it: before, it took the end as done, nothing said since it started by
    created_at, every run, and the one message, too few for a cold formation, stayed unformed."""
    h = await _harness(dev_env, tmp_path)
    an_hour_ago = datetime.now(UTC) - timedelta(hours=1)
    await h.record("s1", chat("s1", 4, an_hour_ago))
    async with h.worker():
        first = await h.memory.on_session_end("eve", "s1")
        # ended when it was said, then the late turn: said half an hour ago, recorded now
        await h.store.end_session("s1", "eve", an_hour_ago + timedelta(minutes=1))
        await h.record("s1", chat("s1-late", 1, an_hour_ago + timedelta(minutes=30)))
        job = await h.cold_run()
        handle = h.client.get_workflow_handle(end_id("s1"), result_type=SessionEndSummary)
        again = await asyncio.wait_for(handle.result(), 60)

    assert first.formation.messages_formed == 4
    assert (job.ends_started, job.nothing_due) == (1, 0), job.summary()
    assert again.formation.messages_formed == 1
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (5, 0)


def end_id(session: str) -> str:
    return session_end_workflow_id("eve", session)


class _Unreachable:
    """A Temporal client whose server is restarting."""

    async def start_workflow(self, *args: Any, **kwargs: Any) -> Any:
        raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")

    def get_workflow_handle(self, *args: Any, **kwargs: Any) -> _Unreachable:
        return self  # its describe() (has the end run already?) fails the same way

    async def describe(self) -> Any:
        raise RPCError("tcp connect error", RPCStatusCode.UNAVAILABLE, b"")


async def test_transport_error_is_try_again_later_not_a_failed_session(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    at = datetime.now(UTC) - timedelta(hours=1)
    await h.record("ended", chat("ended", 2, at))
    activities = SessionActivities(h.deps, _Unreachable())  # type: ignore[arg-type]
    page = EndedPage(sessions=[("ended", "eve")], ended_before=at)

    [outcome] = await ActivityEnvironment().run(activities.start_session_ends, page, 2)

    assert outcome.outcome == "retry_later"
    assert outcome.error is not None and "tcp connect error" in outcome.error
    result = ColdSessionsResult()
    result.add([outcome])
    assert (result.failed, result.retry_later) == (0, 1)


def test_the_schedules_input_decodes_in_workers_built_before_the_ended_pages() -> None:
    """Workers of the build before FINISH_ENDED_PAGES forbid unknown fields: the schedule's
    input (and a run's until it walks the ended pages) carries none of the new ones."""
    payload = json.loads(to_json(ColdSessionsInput.from_settings(Settings())))
    assert not {"cold_done", "ended_after"} & set(payload)
    walking = ColdSessionsInput.from_settings(Settings()).model_copy(
        update={"cold_done": True, "ended_after": ("s1", "eve")}
    )
    assert ColdSessionsInput.model_validate_json(to_json(walking)) == walking
