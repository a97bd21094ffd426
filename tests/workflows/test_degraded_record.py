"""The store's lasting record of degraded windows (memory/degraded.py), written with each window's
memories by the commit activity: what `mnemos degraded list` reads however long the run, whether
the run failed later, and after Temporal's retention deleted it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from memory.degraded import DegradedWindow
from memory.errors import MalformedOutputError
from memory.formation_commit import FormationCommit, FormationCommitResult
from memory.llm.base import LLMRequest
from memory.prompts.decide_facts import FactDecision, FactDecisions
from memory.store.base import MemoryStore
from tests.fakes import Faults, FaultyProxy, permanent, transcript_of
from tests.harness import Harness, conversation, facts
from tests.workflows.test_formation import seeded


def _cut_off(request: LLMRequest) -> None:
    raise MalformedOutputError("output hit the token limit (finish_reason=length)")


def _stored(found: list[DegradedWindow]) -> list[tuple[int, int, str]]:
    return [(w.after_seq, w.upto_seq, w.step) for w in found]


async def test_a_message_passed_over_is_recorded_though_the_run_fails_after_it(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Message 1 is passed over and committed, message 2 then fails the run for good: the run
    never wrote its memo, the store holds the window."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(2))

    def second_fails(request: LLMRequest) -> None:
        if [m.seq for m in transcript_of(request)] == [2]:
            raise permanent()
        _cut_off(request)

    h.llm.defaults["extract_facts"] = second_fails
    async with h.worker():
        with pytest.raises(WorkflowFailureError):
            await h.form("s1")

    [window] = await h.store.list_degraded(agent_id="eve", session_id="s1")
    assert _stored([window]) == [(0, 1, "extract_facts")]
    assert "token limit" in window.reason and window.reformed_at is None
    assert window.formation_id.startswith("eve:s1:")
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 1


async def test_each_window_of_a_run_is_recorded_with_its_commit(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Four messages passed over one by one, and a whole window whose decisions fell back:
    every degraded step is in the store, each with the formation that committed it."""
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.defaults["extract_facts"] = _cut_off
    async with h.worker():
        passed_over = await h.form("s1")
        await h.record("s1", conversation(2, start=4, prefix="n"))
        h.llm.defaults["extract_facts"] = facts(("Alice works at Acme Robotics as CTO", "user"))
        never_shown = FactDecision(
            new_fact_index=4, event="UPDATE", existing_index=0, merged_text="x"
        )
        h.llm.defaults["decide_facts"] = FactDecisions(decisions=[never_shown])
        undecided = await h.form("s1")

    found = await h.store.list_degraded(agent_id="eve", session_id="s1")
    assert sorted(_stored(found)) == sorted(
        [(i, i + 1, "extract_facts") for i in range(4)] + [(4, 6, "decide_fact_changes")]
    )
    # What the runs' summaries said, window for window.
    said = [(d.after_seq, d.upto_seq, d.step) for d in passed_over.degraded + undecided.degraded]
    assert sorted(said) == sorted(_stored(found))
    assert len({w.formation_id for w in found}) == 5


@pytest.mark.parametrize("fault", ["before write", "reply lost after write"])
async def test_a_retried_commit_records_each_window_once(
    time_env: WorkflowEnvironment, tmp_path: Path, fault: str
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(2))
    h.llm.defaults["extract_facts"] = _cut_off
    faults = Faults(before=1) if fault == "before write" else Faults(after=1)
    # The commit (and with it the record) fails before its write, or after it, its reply lost.
    h.worker_store = FaultyProxy(h.store, {"commit_formation": faults})  # type: ignore[assignment]
    async with h.worker():
        summary = await h.form("s1")

    assert faults.before == 0 and faults.after == 0  # the injected failure happened
    assert summary.passed_over == 2
    found = await h.store.list_degraded(agent_id="eve", session_id="s1")
    assert sorted(_stored(found)) == [(0, 1, "extract_facts"), (1, 2, "extract_facts")]


class _ForgetsAfterFirstCommit:
    """The worker's store: forget_user(alice) lands right after the first commit transaction,
    before anything else of that commit activity runs (or a retry of it after a crash)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self.forgot = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def commit_formation(self, commit: FormationCommit) -> FormationCommitResult:
        result = await self._store.commit_formation(commit)
        if not self.forgot:
            self.forgot = True
            await self._store.forget_user("alice", agent_id="eve", at=datetime.now(UTC))
        return result


async def test_a_forget_after_the_commit_leaves_no_reason_quoting_the_user(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Alice's message is passed over, the model's complaint quoting it; forget_user(alice)
    lands once its window committed. Bob keeps s1, and its degraded windows stay to be re-formed,
    but none may keep a reason quoting what Alice said."""
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", [*conversation(2), *conversation(2, start=2, user="bob", prefix="b")])

    def quoting(request: LLMRequest) -> None:
        said = " | ".join(m.content for m in transcript_of(request))
        raise MalformedOutputError(f"output hit the token limit (finish_reason=length): {said}")

    h.llm.defaults["extract_facts"] = quoting
    proxy = _ForgetsAfterFirstCommit(h.store)
    h.worker_store = proxy  # type: ignore[assignment]
    async with h.worker():
        await h.form("s1")

    assert proxy.forgot
    found = await h.store.list_degraded(agent_id="eve", session_id="s1", include_reformed=True)
    assert found  # bob's messages passed over are listed, to be re-formed
    assert not [w.reason for w in found if "message 0 from the user" in w.reason]
