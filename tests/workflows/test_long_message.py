"""A message longer than the formation budget is read whole, in slices: the facts at its start,
middle and end are all formed, each citing the message, in one commit that moves the cursor past
it (memory/pipeline/slices.py); a slice no retry can extract is passed over alone, visibly; a
message within the budget is read as before, in one call, on a worker of the previous build too."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowHistory
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

import worker as worker_module
from memory import transcript
from memory.errors import MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings
from tests.fakes import transcript_of
from tests.harness import T0, Harness, add_all, facts
from workflows.naming import formation_workflow_id

BUDGET_TOKENS = 1000  # 4,000 characters at 4 characters per token
BUDGET = BUDGET_TOKENS * 4
FILLER = "We talked about the weather and the garden for a while. "
START = "My locker code at the Lisbon gym is 4411. "
MIDDLE = " My passport number is X9912345. "
END = " My daughter Mia was born on 3 May 2019."


def long_message(length: int = 29 * BUDGET // 10) -> str:
    """About ``length`` characters: a fact at its start, one in its middle, one at its end. Read
    in 3 slices by default: each ends at a sentence end, up to a sentence short of the budget
    (transcript.spans), so 3 budgets' worth would take a fourth."""
    half = (length - len(START) - len(MIDDLE) - len(END)) // 2 // len(FILLER)
    return START + FILLER * half + MIDDLE.strip() + " " + FILLER * half + END.strip()


def said(content: str, i: int = 0) -> MessageIn:
    return MessageIn(
        message_id=f"m{i}",
        role="user",
        user_id="alice",
        name="Alice",
        content=content,
        created_at=T0 + timedelta(minutes=i),
    )


async def _history(h: Harness) -> WorkflowHistory:
    return await h.client.get_workflow_handle(formation_workflow_id("eve", "s1")).fetch_history()


def _scheduled(history: WorkflowHistory, name: str) -> list[list[object]]:
    """The arguments of each scheduled activity ``name``, in order."""
    return [
        [json.loads(p.data) for p in e.activity_task_scheduled_event_attributes.input.payloads]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == name
    ]


async def _cursor(h: Harness) -> int:
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None
    return state.cursor_seq


async def test_every_slice_of_a_long_message_is_formed_in_one_commit(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    content = long_message()
    assert 2.5 * BUDGET < len(content) <= 3 * BUDGET
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")
        history = await _history(h)

    formed = await h.all_facts()
    holding = {n: [f for f in formed if n in f.content] for n in ("4411", "X9912345", "Mia")}
    assert {n: len(fs) for n, fs in holding.items()} == {"4411": 1, "X9912345": 1, "Mia": 1}
    assert all(f.source_message_ids == ("m0",) for fs in holding.values() for f in fs)
    assert summary.degraded == [] and summary.passed_over == 0
    assert (summary.formations, summary.messages_formed) == (1, 1)
    assert (summary.sliced_messages, summary.slices_read) == (1, 3)
    assert "1 long message(s) read in 3 slices" in str(summary.memo()["summary"])
    # One extraction per slice, its index an argument (none halved: no answer was full,
    # memory/pipeline/pieces.py); one commit, past the message.
    assert [args[1:] for args in _scheduled(history, "extract_facts")] == [[0], [1], [2]]
    assert _scheduled(history, "extract_piece_facts") == []
    assert [args[2:] for args in _scheduled(history, "extract_reflections")] == [[0], [1], [2]]
    assert len(_scheduled(history, "commit_formation")) == 1
    assert await _cursor(h) == 1


def code_words(request: LLMRequest) -> ExtractedFacts:
    """A fact per code word shown; a slice showing "unreadable" makes the answer unusable."""
    shown = " ".join(m.content for m in transcript_of(request))
    if "unreadable" in shown:
        raise MalformedOutputError("output does not fit the schema")
    words = re.findall(r"\bCODE\w+", shown)
    return facts(*[(f"Alice's code word is {w}", "user") for w in words], sources=[1])


async def test_a_slice_no_retry_can_extract_is_passed_over_alone_and_visibly(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )
    h.llm.defaults["extract_facts"] = code_words
    h.llm.defaults["decide_facts"] = add_all
    half = FILLER * (BUDGET // 2 // len(FILLER) - 1)
    content = "".join(f"{half}{code} {half}" for code in ("CODEA", "CODEB unreadable", "CODEC"))
    # Each code word in the middle of its own slice.
    shown = [content[a:b] for a, b in transcript.spans(content, BUDGET, rule=transcript.CUT_RULE)]
    assert [re.findall(r"CODE\w+", part) for part in shown] == [["CODEA"], ["CODEB"], ["CODEC"]]
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")

    assert {f.content for f in await h.all_facts()} == {
        "Alice's code word is CODEA",
        "Alice's code word is CODEC",
    }
    [over] = summary.degraded
    assert (over.step, over.after_seq, over.upto_seq) == ("extract_facts", 0, 1)
    # Read again in halves first (memory/pipeline/pieces.py): only the piece that stays
    # unusable, too short to halve, is passed over.
    assert over.reason.startswith("slice 2 of 3, half ")
    assert summary.passed_over == 1 and summary.formations == 1
    [record] = await h.store.list_degraded(agent_id="eve", session_id="s1")
    assert (record.step, record.after_seq, record.upto_seq) == ("extract_facts", 0, 1)
    assert await _cursor(h) == 1


async def test_a_message_within_the_budget_is_read_as_before(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )
    h.llm.defaults["extract_facts"] = code_words
    h.llm.defaults["decide_facts"] = add_all
    content = f"CODEA {FILLER * (BUDGET // len(FILLER) - 1)}CODEB"
    assert len(content) <= BUDGET
    await h.record("s1", [said(content)])
    async with h.worker():
        summary = await h.form("s1")
        history = await _history(h)

    [request] = h.llm.calls("extract_facts")
    assert [m.content for m in transcript_of(request)] == [content]  # whole, no marker
    assert len(_scheduled(history, "extract_facts")[0]) == 1  # the window alone, as before
    assert _scheduled(history, "extract_piece_facts") == []  # read whole: no piece halved
    assert len(_scheduled(history, "extract_reflections")[0]) == 2
    assert "slices" not in str(summary.memo()) and summary.formations == 1
    assert {f.content for f in await h.all_facts()} == {
        "Alice's code word is CODEA",
        "Alice's code word is CODEB",
    }


def _patches(history: WorkflowHistory) -> list[str]:
    """The patches the run recorded (workflow.patched markers), in order."""
    return [
        json.loads(e.marker_recorded_event_attributes.details["patch-data"].payloads[0].data)["id"]
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and e.marker_recorded_event_attributes.marker_name == "core_patch"
    ]


def _without_piece_activity(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers of the previous build: no extract_piece_facts (the new workflow code runs)."""
    real = Worker

    def old_build(client: Client, **kw: Any) -> Worker:
        kw["activities"] = [
            a for a in kw["activities"] if getattr(a, "__name__", "") != "extract_piece_facts"
        ]
        return real(client, **kw)

    monkeypatch.setattr(worker_module, "Worker", old_build)


async def test_a_message_forms_on_a_worker_of_the_previous_build(
    time_env: WorkflowEnvironment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """During a roll, a worker that lacks extract_piece_facts fails an attempt of it with the
    SDK's "NotFoundError", a type the step's retry policy lists as permanent (h78): the run
    failed at once. An ordinary window of one message schedules nothing new (the same commands
    and no marker as before DENSE_MESSAGES), so it forms there; a dense one still fails the run,
    nothing written, the cursor where it was (README "Upgrades")."""
    _without_piece_activity(monkeypatch)
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["extract_facts"] = code_words
    h.llm.defaults["decide_facts"] = add_all
    await h.record("s1", [said("My code word is CODEA.")])
    async with h.worker():
        summary = await h.form("s1")
        history = await _history(h)
    assert summary.formations == 1 and summary.passed_over == 0
    assert [f.content for f in await h.all_facts()] == ["Alice's code word is CODEA"]
    assert _scheduled(history, "extract_facts") == [[_scheduled(history, "extract_facts")[0][0]]]
    assert _scheduled(history, "extract_piece_facts") == []
    assert "dense-messages" not in _patches(history)

    # A dense message: its first read is full, its halves are asked of the old worker.
    content = " ".join(f"CODE{i} is mine." for i in range(60))
    h.llm.defaults["extract_facts"] = facts(
        *[(f"Alice's code word is CODE{i}", "user") for i in range(40)], sources=[1]
    )
    await h.record("s1", [said(content, 1)])
    async with h.worker():
        with pytest.raises(WorkflowFailureError) as failed:
            await h.form("s1")
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and cause.activity_type == "extract_piece_facts"
    assert isinstance(cause.cause, ApplicationError) and cause.cause.type == "NotFoundError"
    assert await _cursor(h) == 1 and len(await h.all_facts()) == 1
