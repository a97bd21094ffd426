"""ConsolidateScope against what happens around it: a person correcting a buffered reflection
while the blob is being drafted, and an LLM provider that stays down longer than the draft's
retries."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.prompts.consolidate import ConsolidatedSections
from memory.settings import ReflectionSettings
from runtime.starts import request_consolidation
from tests.fakes import consolidated, echo_consolidation, transient
from tests.harness import Harness, conversation, reflections
from tests.histories.recorder import time_skipping
from workflows.summary import ConsolidationSummary


async def _buffered_in_session(h: Harness, items: list[str]) -> None:
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(session=items))


async def test_a_reflection_corrected_during_the_draft_is_consolidated_with_the_correction(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await _buffered_in_session(h, ["goal one", "goal two", "goal three", "goal four"])

    async def corrected_while_drafting(request: LLMRequest) -> ConsolidatedSections:
        # The draft has read the buffer; a person corrects a reflection on the memory page
        # before the blob drafted from its old text is stored.
        [two] = [r for r in await h.buffered(h.key("session")) if r.content == "goal two"]
        await h.store.edit_reflection(two.reflection_id, content="goal 2, not two")
        return echo_consolidation(request)

    h.llm.script("consolidate", corrected_while_drafting)
    async with h.worker():
        await h.form("s1")
        summary = await h.consolidation_result(h.key("session"))

    blob = await h.store.get_consolidated(h.key("session"))
    assert blob is not None and blob.version == 1
    assert "- goal 2, not two" in blob.content
    assert "goal two" not in blob.content
    assert await h.buffered(h.key("session")) == []
    assert (summary.consolidations, len(summary.llm_calls)) == (1, 2)  # drafted again


async def _user_buffer_waiting(h: Harness) -> None:
    """Four user reflections, below the threshold (no formation asks for them)."""
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=["w", "x", "y", "z"]))
    async with h.worker():
        await h.form("s1")


async def _consolidate_user(h: Harness) -> tuple[ConsolidationSummary, WorkflowHistory]:
    """Ask as a session end or the cold job does (forced). The handle of a start through the
    test client lets the server skip time while the test waits on it."""
    handle = await request_consolidation(h.client, h.settings, h.key("user"), force=True)
    async with h.worker():
        return await handle.result(), await handle.fetch_history()


def _quiet_user(env: WorkflowEnvironment, tmp_path: Path) -> Awaitable[Harness]:
    return Harness.create(env, tmp_path, reflections=ReflectionSettings(threshold_user=5))


async def test_a_user_consolidation_waits_out_a_provider_outage_and_consolidates(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The provider fails every attempt of the draft's retries: the run waits on a timer and
    drafts again, instead of leaving the buffer until the user's next reflection."""
    h = await _quiet_user(time_env, tmp_path)
    await _user_buffer_waiting(h)
    down = [transient("provider down") for _ in range(h.settings.retries.llm_max_attempts)]
    h.llm.script("consolidate", *down)
    summary, _ = await _consolidate_user(h)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and all(f"- {r}" in blob.content for r in "wxyz")
    assert await h.buffered(h.key("user")) == []
    assert summary.degraded is None and summary.consolidations == 1
    assert len(h.llm.calls("consolidate")) == len(down) + 1


@pytest.fixture
async def own_clock() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server of its own: the test below moves its clock two days on, which the
    session's shared server should not see."""
    async with time_skipping() as env:
        yield env


async def test_a_consolidation_gives_up_visibly_after_two_days_of_outage(
    own_clock: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await _quiet_user(own_clock, tmp_path)
    # Two attempts a draft, not five: the waits between drafts are what is tested, and every
    # attempt is a real round trip (the test server does not skip retry intervals).
    h.settings = h.settings.model_copy(
        update={"retries": h.settings.retries.model_copy(update={"llm_max_attempts": 2})}
    )
    await _user_buffer_waiting(h)
    h.llm.defaults["consolidate"] = transient("provider down")
    summary, history = await _consolidate_user(h)

    assert summary.degraded is not None
    assert "gave up" in summary.degraded and "provider down" in summary.degraded
    assert summary.consolidations == 0
    assert len(await h.buffered(h.key("user"))) == 4  # kept for the next request
    # The run (its waits on the server's clock) took two days at most, and gave up near them.
    run = history.events[-1].event_time.ToDatetime() - history.events[0].event_time.ToDatetime()
    assert 40 <= run.total_seconds() / 3600 <= 48
    drafts = len(h.llm.calls("consolidate")) / h.settings.retries.llm_max_attempts
    assert 10 <= drafts <= 25  # bounded: the waits grow to hours


async def _reviewed_while_drafting(
    h: Harness, edits: int | None
) -> tuple[ConsolidationSummary, list[str]]:
    """A person corrects the user's buffered reflections one per draft (a review pass on the memory
    page while the model drafts), ``edits`` of them (None: without end); returns the forced
    consolidation's summary and the reflections' contents after it."""
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=["v", "w", "x", "y", "z"]))
    async with h.worker():
        await h.form("s1")
    order = [r.reflection_id for r in await h.buffered(h.key("user"))]
    made = 0

    async def corrects_one(request: LLMRequest) -> ConsolidatedSections:
        nonlocal made
        if edits is None or made < edits:
            await h.store.edit_reflection(order[made % len(order)], content=f"fixed {made}")
            made += 1
        return echo_consolidation(request)

    h.llm.defaults["consolidate"] = corrects_one
    summary, _ = await _consolidate_user(h)
    stored = await h.store.list_reflections(h.key("user"), include_absorbed=True)
    return summary, sorted(r.content for r in stored)


async def test_a_review_pass_during_the_drafts_is_consolidated_with_every_correction(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Five corrections, each during a draft: five conflicts in a row failed the run (and nothing
    asked again until the user's next reflection); now it drafts again until the person stops."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    summary, _ = await _reviewed_while_drafting(h, edits=5)

    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and all(f"- fixed {i}" in blob.content for i in range(5))
    assert await h.buffered(h.key("user")) == []
    assert (summary.consolidations, summary.degraded) == (1, None)


async def test_edits_without_end_give_up_visibly_and_keep_every_correction(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Edits during every draft: the run drafts again with growing waits for
    retries.stale_decision_seconds, then ends degraded (not failed), every correction buffered."""
    h = await Harness.create(time_env, tmp_path, reflections=ReflectionSettings(threshold_user=9))
    h.settings = h.settings.model_copy(
        update={"retries": h.settings.retries.model_copy(update={"stale_decision_seconds": 30})}
    )
    summary, contents = await _reviewed_while_drafting(h, edits=None)

    assert summary.consolidations == 0
    assert summary.degraded is not None and "kept changing" in summary.degraded
    assert await h.store.get_consolidated(h.key("user")) is None
    assert len(contents) == 5 and all(c.startswith("fixed ") for c in contents)
    assert len(await h.buffered(h.key("user"))) == 5
    drafts = len(h.llm.calls("consolidate"))
    assert 6 <= drafts <= 12  # four at once, then waits of 1 s doubling until 30 s passed


async def test_a_draft_repeating_the_prompts_rules_replaces_nothing_and_absorbs_nothing(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A weak model answers the prompt's own rules: stored, they stood in every later prompt as
    Alice's memory, and the reflections they replaced were marked absorbed, lost."""
    h = await _quiet_user(time_env, tmp_path)
    await h.record("s1", conversation(4))
    said = ["Alice wants code samples in Rust", "Alice dislikes long preambles"]
    h.llm.script("extract_reflections", reflections(user=said))
    async with h.worker():
        await h.form("s1")
    h.llm.defaults["consolidate"] = consolidated(
        "Preserve important existing insights; integrate the new information.",
        "Resolve contradictions: newer information wins. Drop what is outdated.",
        "Focus on preferences, directives and interaction style: how should the agent "
        "interact with this user?",
        title="RULES",
    )
    summary, _ = await _consolidate_user(h)

    assert summary.consolidations == 0 and summary.degraded is not None
    assert await h.store.get_consolidated(h.key("user")) is None
    assert sorted(r.content for r in await h.buffered(h.key("user"))) == sorted(said)


async def test_the_offline_provider_keeps_a_memory_written_by_hand(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A person writes Alice's memory in plain lines: the offline provider's next consolidation
    kept only its "- " bullets, and so none of it."""
    h = await _quiet_user(time_env, tmp_path)
    await h.memory.manager.edit_consolidated(
        h.key("user"), "Alice is allergic to peanuts.\nAlice prefers answers in French."
    )
    await h.record("s1", conversation(4))
    h.llm.script("extract_reflections", reflections(user=["Alice likes short answers"]))
    async with h.worker():
        await h.form("s1")
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    summary, _ = await _consolidate_user(h)

    assert summary.consolidations == 1
    blob = await h.store.get_consolidated(h.key("user"))
    assert blob is not None and blob.content == (
        "VERSION: 2\n- Alice is allergic to peanuts.\n- Alice prefers answers in French.\n"
        "- Alice likes short answers"
    )
