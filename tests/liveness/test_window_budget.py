"""Issue #12 case 7, size: a window is cut by a token budget as well as a message count, and a
message longer than the budget is alone in its window, read in slices within the budget (each
marked where the message goes on), and stored whole (memory/pipeline/slices.py)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.base import LLMRequest
from memory.models import MessageIn
from memory.prompts.extract_facts import ExtractedFacts, ExtractFactsInput
from memory.settings import FormationSettings
from memory.transcript import as_said
from tests.fakes import facts_input
from tests.harness import T0, Harness, add_all, facts

BUDGET_TOKENS = 100  # 400 characters at 4 characters per token


def said(i: int, content: str) -> MessageIn:
    return MessageIn(
        message_id=f"m{i}",
        role="user",
        content=content,
        created_at=T0 + timedelta(minutes=i),
        user_id="alice",
    )


async def test_windows_fit_the_budget_and_a_huge_message_is_read_in_slices(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )
    huge = "All about my trip. " * 500  # 9,500 characters
    messages = [said(i, f"Short message number {i} of the day.") for i in range(6)]
    messages.insert(3, said(99, huge))
    await h.record("s1", messages)

    async with h.worker():
        summary = await h.form("s1")

    assert summary.messages_formed == 7
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and (state.cursor_seq, state.pending_messages) == (7, 0)
    windows = [r.task_input for r in h.llm.calls("extract_facts")]
    assert all(isinstance(w, ExtractFactsInput) for w in windows)
    shown = [[m.content for m in w.messages] for w in windows if isinstance(w, ExtractFactsInput)]
    slices = [w for w in shown if any("[…]" in c for c in w)]
    assert (summary.sliced_messages, summary.slices_read) == (1, len(slices)) and len(slices) >= 24
    assert len(shown) == summary.formations - 1 + len(slices)
    # The huge message alone, in slices within the budget that hold it all; the others whole.
    assert all(len(w) == 1 and len(w[0]) <= 400 + len(" […] […]") for w in slices)
    assert " ".join(as_said(w[0]) for w in slices) == as_said(huge)
    assert [c for w in shown if w not in slices for c in w] == [
        m.content for m in messages if m.message_id != "m99"
    ]
    assert all(sum(len(c) for c in w) <= 400 for w in shown if w not in slices)
    [stored] = [m for m in await h.store.load_messages("s1", 0, 7) if m.message_id == "m99"]
    assert stored.content == huge


async def test_a_model_that_copies_the_slice_marker_stores_the_words_not_the_marker(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_tokens_per_run=BUDGET_TOKENS)
    )

    def copy_the_tail(request: LLMRequest) -> ExtractedFacts:
        # What a model does with a cut message: its last words, the marker with them.
        shown = facts_input(request).messages[0].content
        return facts((shown[-60:], "user"), sources=[1])

    h.llm.defaults["extract_facts"] = copy_the_tail
    h.llm.defaults["decide_facts"] = add_all
    message = "I planned my trip to Lisbon for May 2027. " * 30
    await h.record("s1", [said(0, message)])
    async with h.worker():
        await h.form("s1")

    formed = await h.all_facts()
    assert formed and all("[" not in f.content and f.content in message for f in formed)
