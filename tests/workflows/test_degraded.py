"""Degraded, never stuck (issue #12): a step whose model output stays invalid through its retries
takes its documented fallback; the pass commits, the cursor moves, the run says "degraded" and
why, and the session keeps forming."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidModelOutputError, MalformedOutputError, ProviderError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from memory.prompts.decide_facts import FactDecision, FactDecisions
from tests.context_refusals import refusal
from tests.fakes import transcript_of
from tests.harness import T0, Harness, conversation, facts, reflections
from tests.workflows.test_formation import seeded


def _cut_off(request: LLMRequest) -> None:
    raise MalformedOutputError("output hit the token limit (finish_reason=length)")


async def _cursor(h: Harness, session: str = "s1") -> int:
    state = await h.store.get_session_agent_state(session, "eve")
    assert state is not None
    return state.cursor_seq


async def test_decisions_that_stay_invalid_add_the_facts_unmerged_and_flagged(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script(
        "extract_facts",
        facts(
            ("Alice works at Acme Robotics as CTO", "user"),
            ("Bob Martins leads logistics", "agent"),
        ),
    )
    # A decision for a new fact that was never shown, on every attempt.
    never_shown = FactDecisions(
        decisions=[
            FactDecision(new_fact_index=4, event="UPDATE", existing_index=0, merged_text="x")
        ]
    )
    h.llm.defaults["decide_facts"] = never_shown
    h.llm.script("extract_reflections", reflections(user=["prefers bullets"]))
    async with h.worker():
        summary = await h.form("s1")
        # The session keeps forming: the next window is formed as usual.
        await h.record("s1", conversation(2, start=4, prefix="n"))
        h.llm.script("extract_facts", facts(("Alice's email is a@example.com", "user")))
        later = await h.form("s1")

    # Rejected the same way twice: no retry can change it, the fallback follows at once.
    assert len(h.llm.calls("decide_facts")) == 2
    [step] = summary.degraded
    assert (step.step, step.after_seq, step.upto_seq) == ("decide_fact_changes", 0, 4)
    assert "unknown new fact index 4" in step.reason
    assert "DEGRADED" in summary.memo()["summary"]  # type: ignore[operator]
    assert summary.decisions == {"ADD": 2}
    assert sorted(f.content for f in await h.all_facts()) == [
        "Alice works at Acme Robotics",
        "Alice works at Acme Robotics as CTO",
        "Alice's email is a@example.com",
        "Bob Martins leads logistics",
    ]
    assert [r.content for r in await h.buffered(h.key("user"))] == ["prefers bullets"]
    assert await _cursor(h) == 6
    assert later.degraded == [] and later.facts_added == 1


async def test_a_decision_the_servers_context_refuses_adds_the_facts_unmerged_and_flagged(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """llama.cpp refusing the decision's prompt as over its context (HTTP 400): the step has no
    input to split, and mnemos sends it capped (memory/llm/context_fit.py); the refusal failed
    the run, and every later run at the same window. Now it takes the step's fallback."""
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    h.llm.defaults["decide_facts"] = refusal()
    h.llm.script("extract_reflections", reflections(user=["prefers bullets"]))
    async with h.worker():
        summary = await h.form("s1")

    assert len(h.llm.calls("decide_facts")) == 1  # the same prompt is refused again: no retry
    [step] = summary.degraded
    assert (step.step, step.after_seq, step.upto_seq) == ("decide_fact_changes", 0, 4)
    assert "exceeds the model's context" in step.reason
    assert summary.decisions == {"ADD": 1}
    assert sorted(f.content for f in await h.all_facts()) == [
        "Alice works at Acme Robotics",
        "Alice works at Acme Robotics as CTO",
    ]
    assert await _cursor(h) == 4


async def test_retries_after_invalid_output_never_repeat_the_request(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    offered = iter(range(3, 100))

    def each_time_another(request: LLMRequest) -> None:
        raise InvalidModelOutputError(f"existing index {next(offered)} was not offered")

    h.llm.defaults["decide_facts"] = each_time_another
    async with h.worker():
        await h.form("s1")
    sent = [(r.prompt, r.temperature) for r in h.llm.calls("decide_facts")]
    assert len(sent) == 5 and len(set(sent)) == 5
    assert [t for _, t in sent] == [0.0, 0.3, 0.6, 0.9, 1.0]
    assert "An earlier answer was rejected (the last: existing index 3" in sent[1][0]
    assert "2 earlier answers were rejected (the last: existing index 4" in sent[2][0]
    assert "rejected" not in sent[0][0]


async def test_a_retry_after_a_provider_failure_sends_the_same_request(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """A timeout is no wrong answer: its retry is the request again, not a hotter one saying an
    answer was rejected. A rejection is remembered across a timeout that follows it."""
    h = await seeded(time_env, tmp_path, "Alice works at Acme Robotics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Alice works at Acme Robotics as CTO", "user")))
    outcomes = iter(
        [
            ProviderError("timed out", retryable=True),
            InvalidModelOutputError("existing index 3 was not offered"),
            ProviderError("timed out", retryable=True),
        ]
    )

    def timeout_rejection_timeout_then_answer(request: LLMRequest) -> FactDecisions:
        if (failure := next(outcomes, None)) is not None:
            raise failure
        return FactDecisions(
            decisions=[
                FactDecision(new_fact_index=0, event="ADD", existing_index=None, merged_text=None)
            ]
        )

    h.llm.defaults["decide_facts"] = timeout_rejection_timeout_then_answer
    async with h.worker():
        summary = await h.form("s1")
    sent = [(r.prompt, r.temperature) for r in h.llm.calls("decide_facts")]
    assert len(sent) == 4
    assert sent[1] == sent[0] and sent[0][1] == 0.0 and "rejected" not in sent[0][0]
    assert sent[3] == sent[2] and sent[2][1] == 0.3
    assert "An earlier answer was rejected (the last: existing index 3" in sent[2][0]
    assert summary.degraded == []


async def test_extraction_that_stays_invalid_is_split_and_each_message_passed_over_visibly(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(4))
    h.llm.defaults["extract_facts"] = _cut_off
    h.llm.defaults["extract_reflections"] = reflections(session=["planning the festival"])
    async with h.worker():
        summary = await h.form("s1")
    # 4 messages, then 2, then each alone: every message was tried on its own before passed over.
    assert summary.splits == 2 and summary.passed_over == 4
    assert [(d.step, d.after_seq, d.upto_seq) for d in summary.degraded] == [
        ("extract_facts", i, i + 1) for i in range(4)
    ]
    assert "token limit" in summary.degraded[0].reason
    assert "4 message(s) passed over" in summary.memo()["summary"]  # type: ignore[operator]
    assert await h.all_facts() == []
    # Their reflections are still formed.
    assert [r.content for r in await h.buffered(h.key("session"))] == ["planning the festival"]
    assert await _cursor(h) == 4


async def test_reflections_that_stay_invalid_are_split_and_the_facts_formed(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(2))
    h.llm.defaults["extract_facts"] = lambda r: (
        facts(("Alice's email is a@example.com", "user"))
        if any(m.seq == 1 for m in transcript_of(r))
        else facts()
    )
    h.llm.defaults["extract_reflections"] = _cut_off
    async with h.worker():
        summary = await h.form("s1")
    assert [(d.step, d.after_seq) for d in summary.degraded] == [
        ("extract_reflections", 0),
        ("extract_reflections", 1),
    ]
    assert [f.content for f in await h.all_facts()] == ["Alice's email is a@example.com"]
    assert await h.buffered(h.key("session")) == []
    assert await _cursor(h) == 2


def _said(i: int, text: str) -> MessageIn:
    from datetime import timedelta

    return MessageIn(
        message_id=f"k{i}",
        role="user",
        content=text,
        created_at=T0 + timedelta(hours=1, minutes=i),
        user_id="alice",
    )


async def test_a_correction_of_a_correction_in_one_window_forms_and_so_does_what_follows(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Issue #12 case 1, with the offline heuristic provider end to end."""
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    await h.record("s0", [_said(0, "My locker number is 101.")])
    await h.record(
        "s1",
        [
            _said(1, "My locker number is 102."),
            _said(2, "Sorry, my locker number is 103."),
            _said(3, "My email is kay@example.com."),
        ],
    )
    async with h.worker():
        await h.form("s0")
        summary = await h.form("s1")
    assert summary.degraded == []
    facts_now = await h.all_facts()
    lockers = [f for f in facts_now if "locker" in f.content]
    assert len(lockers) == 1
    [locker] = lockers
    assert "103" in locker.content and locker.version == 3
    assert ["101" in r.content for r in locker.history] == [True, False]
    assert ["102" in r.content for r in locker.history] == [False, True]
    assert any("kay@example.com" in f.content for f in facts_now)
    assert await _cursor(h) == 3


async def test_a_fact_put_in_the_other_scope_is_still_deduplicated(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Issue #12 case 5: one session's statement filed under "user", the next one's under "agent";
    the candidates are every fact the speaker can see, so the two meet and one stays valid."""
    h = await seeded(time_env, tmp_path, "Bob Martins is our head of logistics")
    await h.record("s1", conversation(4))
    h.llm.script("extract_facts", facts(("Carla Reyes is our head of logistics", "agent")))
    h.llm.script(
        "decide_facts",
        FactDecisions(
            decisions=[
                FactDecision(new_fact_index=0, event="DELETE", existing_index=0, merged_text=None)
            ]
        ),
    )
    async with h.worker():
        summary = await h.form("s1")
    [asked] = h.llm.calls("decide_facts")
    assert "Bob Martins is our head of logistics" in asked.prompt
    assert summary.facts_invalidated == 1
    assert [(f.content, f.scope) for f in await h.all_facts()] == [
        ("Carla Reyes is our head of logistics", "agent")
    ]
