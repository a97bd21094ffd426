"""Triggers and serialisation: one formation per (session, agent), follow-ups for messages that arrive
during a run, and many sessions of one agent consolidating into one blob without losing a reflection."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.settings import FormationSettings, ReflectionSettings
from tests.fakes import facts_input, transcript_of
from tests.harness import (
    Harness,
    conversation,
    gate_first_extraction,
    reflections,
    triggered_during_a_pass,
)


async def test_maybe_form_waits_for_the_thresholds(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, formation=FormationSettings(message_interval=6))
    await h.record("t1", conversation(3))
    below_minimum = await h.memory.maybe_form_memories("eve", "t1")
    await h.record("t1", conversation(3, start=3))
    async with h.worker():
        at_interval = await h.memory.maybe_form_memories("eve", "t1")
        assert at_interval.workflow_id == "form:eve:t1"
        await h.client.get_workflow_handle(at_interval.workflow_id).result()
    assert not below_minimum.started and at_interval.started
    state = await h.store.get_session_agent_state("t1", "eve")
    assert state is not None and state.cursor_seq == 6


@pytest.mark.parametrize("hold", [30.0, 0.0], ids=["held", "signalled"])
async def test_messages_recorded_during_a_run_are_formed_by_a_follow_up(
    time_env: WorkflowEnvironment, tmp_path: Path, hold: float
) -> None:
    """Held (the default): the second trigger is not sent, and the run goes round by itself
    because its commit left the session due. Signalled (hold 0): the signal makes it go round."""
    h = await Harness.create(
        time_env,
        tmp_path,
        formation=FormationSettings(message_interval=4, trigger_hold_seconds=hold),
    )
    gate = gate_first_extraction(h)
    await h.record("s1", conversation(4))
    async with h.worker():
        first, second = await triggered_during_a_pass(h, gate, "s1", conversation(4, start=4))
        summary = await h.client.get_workflow_handle(first.workflow_id or "").result()
    assert second.workflow_id == first.workflow_id
    assert second.started is (hold == 0)
    seqs = [[m.seq for m in facts_input(r).messages] for r in h.llm.calls("extract_facts")]
    assert seqs == [[1, 2, 3, 4], [5, 6, 7, 8]]  # each message formed once, in order
    assert summary["formations"] == 2
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 8 and state.pending_messages == 0


async def test_a_held_trigger_is_sent_again_once_the_cursor_moves(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Messages that arrive during a run but are not due at its commit wait, and the next due turn
    asks again: the request was held only until its formation committed."""
    h = await Harness.create(time_env, tmp_path, formation=FormationSettings(message_interval=4))
    gate = gate_first_extraction(h)
    await h.record("s1", conversation(4))
    async with h.worker():
        # The second trigger is due (6 pending) with the cursor still at 0: held.
        first, held = await triggered_during_a_pass(h, gate, "s1", conversation(2, start=4))
        summary = await h.client.get_workflow_handle(first.workflow_id or "").result()
        assert summary["formations"] == 1  # messages 5-6 alone are not due
        await h.record("s1", conversation(2, start=6))
        again = await h.memory.maybe_form_memories("eve", "s1")
        await h.client.get_workflow_handle(again.workflow_id or "").result()
    assert first.started and not held.started and again.started
    assert "requested already" in held.reason
    seqs = [[m.seq for m in facts_input(r).messages] for r in h.llm.calls("extract_facts")]
    assert seqs == [[1, 2, 3, 4], [5, 6, 7, 8]]
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 8 and state.pending_messages == 0


async def test_many_sessions_of_one_agent_absorb_every_reflection_exactly_once(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_agent=3))
    sessions = [f"s{i}" for i in range(8)]

    def per_session(request: LLMRequest) -> object:
        first = transcript_of(request)[0].content
        session = re.sub(r"\D", "", first)
        return reflections(agent=[f"insight {session} a", f"insight {session} b"])

    h.llm.defaults["extract_reflections"] = per_session
    for i, s in enumerate(sessions):
        await h.record(s, conversation(4, prefix=f"{s}-", start=i * 10))
    async with h.worker():
        handles = [await h.start(s) for s in sessions]
        await h.results(handles)
        await h.consolidation_result(h.key("agent"))
    blob = await h.store.get_consolidated(h.key("agent"))
    buffered = {r.content for r in await h.buffered(h.key("agent"))}
    produced = {f"insight {i * 10} {x}" for i in range(8) for x in "ab"}
    assert blob is not None
    in_blob = [line[2:] for line in blob.content.splitlines() if line.startswith("- ")]
    assert sorted(in_blob) == sorted(set(in_blob))  # absorbed once
    assert set(in_blob) | buffered == produced  # none lost
    assert not set(in_blob) & buffered
    assert len(buffered) < 3
