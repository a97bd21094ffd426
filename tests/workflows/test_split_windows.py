"""Split, don't drop (issue #21): a window whose extraction cannot carry it is split, down to one
message, and every fact is formed; only a single message that no retry can extract is passed over,
recorded where operators look; a backlog drains window after window and consolidates once."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from memory.errors import InputRefusedError, MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm.heuristic import HeuristicProvider
from memory.llm.openai_provider import OpenAIProvider, ServerOptions
from memory.models import MessageIn
from memory.prompts.common import MAX_ITEMS
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FormationSettings, Settings
from memory.settings_models import ModelSettings
from tests.context_refusals import LLAMA_CPP, OPENAI, refusal
from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_chat
from tests.fakes import transcript_of
from tests.harness import T0, Harness, add_all, facts
from workflows.naming import formation_workflow_id


def stated(n: int, *, poison: int | None = None) -> list[MessageIn]:
    """``n`` user messages, each stating one fact; message ``poison`` (a seq) no model can read."""
    return [
        MessageIn(
            message_id=f"m{i}",
            role="user",
            content="%$#@ unreadable"
            if i + 1 == poison
            else f"My favourite number {i} is {i * 7}.",
            created_at=T0 + timedelta(seconds=i),
            user_id="alice",
        )
        for i in range(n)
    ]


def said(request: LLMRequest) -> list[tuple[str, str]]:
    return [(f"Alice: {m.content}", "user") for m in transcript_of(request)]


def one_fact_per_message(request: LLMRequest) -> ExtractedFacts:
    return facts(*said(request))


def answers_at_most_the_bound(request: LLMRequest) -> ExtractedFacts:
    """A model told "at most 40" that answers 40 and leaves the rest out."""
    return facts(*said(request)[:MAX_ITEMS])


def fails_beyond_the_bound(request: LLMRequest) -> ExtractedFacts:
    """A model whose answer beyond the bound fails the schema (the offline provider's way)."""
    if len(said(request)) > MAX_ITEMS:
        raise MalformedOutputError(f"{len(said(request))} facts, the schema allows {MAX_ITEMS}")
    return one_fact_per_message(request)


def unreadable_message(request: LLMRequest) -> ExtractedFacts:
    if any("unreadable" in m.content for m in transcript_of(request)):
        raise MalformedOutputError("output does not fit the schema")
    return one_fact_per_message(request)


async def _cursor(h: Harness) -> int:
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None
    return state.cursor_seq


@pytest.mark.parametrize(
    "model",
    [answers_at_most_the_bound, fails_beyond_the_bound],
    ids=["answers-at-the-bound", "fails-beyond-the-bound"],
)
async def test_a_window_over_the_bound_forms_every_fact(
    time_env: WorkflowEnvironment,
    tmp_path: Path,
    model: Callable[[LLMRequest], ExtractedFacts],
) -> None:
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_messages_per_run=100)
    )
    h.llm.defaults["extract_facts"] = model
    h.llm.defaults["decide_facts"] = add_all
    await h.record("s1", stated(100))
    async with h.worker():
        summary = await h.form("s1")

    # 100 messages → 50 → 25 (each answer then carries its window); the drain keeps 25.
    assert summary.splits == 2 and summary.degraded == []
    assert summary.messages_formed == 100 and summary.formations == 4
    formed = sorted(f.content for f in await h.all_facts())
    assert formed == sorted(f"Alice: My favourite number {i} is {i * 7}." for i in range(100))
    assert await _cursor(h) == 100


def refuses_one(request: LLMRequest) -> ExtractedFacts:
    """A content filter refusing every request that holds one message (the run used to fail,
    every time, with the whole window pending)."""
    if any("unreadable" in m.content for m in transcript_of(request)):
        raise InputRefusedError("openai refused: I can't help with that.")
    return one_fact_per_message(request)


@pytest.mark.parametrize(
    ("model", "why"),
    [(unreadable_message, "does not fit the schema"), (refuses_one, "refused")],
    ids=["unusable-output", "input-refused"],
)
async def test_a_single_unextractable_message_is_passed_over_visibly_and_the_rest_formed(
    time_env: WorkflowEnvironment,
    tmp_path: Path,
    model: Callable[[LLMRequest], ExtractedFacts],
    why: str,
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["extract_facts"] = model
    h.llm.defaults["decide_facts"] = add_all
    await h.record("s1", stated(8, poison=6))
    async with h.worker():
        summary = await h.form("s1")

    [over] = summary.degraded
    assert (over.step, over.after_seq, over.upto_seq) == ("extract_facts", 5, 6)
    assert why in over.reason
    assert summary.passed_over == 1
    memo = summary.memo()
    assert "1 message(s) passed over" in memo["summary"]  # type: ignore[operator]
    assert memo["degraded"] == [over.model_dump()]  # what `mnemos degraded list` reads
    formed = {f.content for f in await h.all_facts()}
    assert formed == {f"Alice: My favourite number {i} is {i * 7}." for i in range(8) if i != 5}
    assert await _cursor(h) == 8


async def test_one_refused_message_early_in_a_backlog_does_not_shrink_the_rest_of_its_windows(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The split that passed message 3 over was that message's failure, not the backlog's
    density: once message 4 forms alone, the drain reads windows of 8 again (it used to form
    the other 61 messages one per window, each without its conversation: 63 windows)."""
    h = await Harness.create(
        time_env, tmp_path, formation=FormationSettings(max_messages_per_run=8, min_messages=4)
    )
    h.llm.defaults["extract_facts"] = refuses_one
    h.llm.defaults["decide_facts"] = add_all
    await h.record("s1", stated(64, poison=3))
    async with h.worker():
        summary = await h.form("s1")

    assert summary.passed_over == 1 and summary.splits == 3  # 1-8, 1-4, 3-4
    # 1-2, 3 passed over, 4 alone, then 5-12 ... 61-64 in windows of 8.
    assert summary.formations == 11, summary.formations
    assert summary.messages_formed == 64 and await _cursor(h) == 64
    formed = {f.content for f in await h.all_facts()}
    assert formed == {f"Alice: My favourite number {i} is {i * 7}." for i in range(64) if i != 2}


async def test_a_backlog_of_1000_messages_drains_in_one_run_and_consolidates_once(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """The offline provider fails beyond its bound and is never retried: the first window is
    split once, the rest of the drain reads windows that fit."""
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    await h.record("s1", stated(1000))
    async with h.worker():
        summary = await h.form("s1")
        history = await h.client.get_workflow_handle(
            formation_workflow_id("eve", "s1")
        ).fetch_history()
        await h.consolidation_result(h.key("session"))  # the one it requested, done

    assert summary.messages_formed == 1000 and summary.degraded == []
    assert sum(summary.decisions.values()) == 1000  # one decision per stated fact
    assert await _cursor(h) == 1000
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled.count("request_consolidation") == 1
    assert summary.consolidations_requested  # the session buffer filled, once requested
    # Failures of a deterministic provider are not retried: one extraction per window tried.
    failed = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ]
    assert len(failed) == summary.splits


def over_a_small_context(status: int, body: dict[str, Any]) -> Callable[[LLMRequest], Any]:
    """A server whose context holds 12,000 characters of a window's messages, refusing a larger
    request as it says so (what OpenAIProvider raises for it); one fact per message otherwise."""

    def model(request: LLMRequest) -> ExtractedFacts:
        if sum(len(m.content) for m in transcript_of(request)) > 12_000:
            raise refusal(status, body)
        return facts(
            *[(f"Alice: {m.content.split('. ')[0]}.", "user") for m in transcript_of(request)]
        )

    return model


def long_stated(n: int) -> list[MessageIn]:
    """``n`` messages of about 500 characters, each stating one fact: 40 are one window by
    mnemos' budget, and more than the server's context."""
    return [
        MessageIn(
            message_id=f"m{i}",
            role="user",
            content=f"My favourite number {i} is {i * 7}. " + "We walked along the river. " * 18,
            created_at=T0 + timedelta(seconds=i),
            user_id="alice",
        )
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("status", "body"), [(400, OPENAI), (400, LLAMA_CPP)], ids=["openai", "llama.cpp"]
)
async def test_a_window_the_servers_context_refuses_is_split_and_every_message_formed(
    time_env: WorkflowEnvironment, tmp_path: Path, status: int, body: dict[str, Any]
) -> None:
    """The server, not mnemos' estimate, finds the window too long (models.context_tokens unset,
    or a tokenizer that counts more): HTTP 400 context_length_exceeded / exceed_context_size_error
    used to fail the run, and every later run, at the same window."""
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["extract_facts"] = over_a_small_context(status, body)
    h.llm.defaults["decide_facts"] = add_all
    await h.record("s1", long_stated(40))
    async with h.worker():
        summary = await h.form("s1")

    assert summary.splits >= 1 and summary.passed_over == 0 and summary.degraded == []
    formed = {f.content for f in await h.all_facts()}
    assert formed == {f"Alice: My favourite number {i} is {i * 7}." for i in range(40)}
    assert await _cursor(h) == 40


# What the model answers: nothing worth keeping (the test is about what it is sent).
NOTHING_SAID: dict[str, Any] = {
    "ExtractedFacts": {"facts": []},
    "ExtractedReflections": {
        "agent_reflections": [],
        "user_reflections": [],
        "session_reflections": [],
    },
}


def chinese(n: int) -> list[MessageIn]:
    """``n`` messages of about 270 Han characters: a tokenizer gives about one token each."""
    return [
        MessageIn(
            message_id=f"c{i}",
            role="user",
            content=f"第{i}条：" + "今天天气很好，我们沿着河边散步，然后去了市场买菜。" * 11,
            created_at=T0 + timedelta(seconds=i),
            user_id="alice",
        )
        for i in range(n)
    ]


async def test_chinese_text_is_split_to_the_models_context_before_the_server_refuses_it(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """MNEMOS_MODELS__CONTEXT_TOKENS=8192 set right, as for llama.cpp -c 8192: mnemos' own check
    (memory/llm/context_fit.py) counted Chinese at 3 characters a token, sent a window of about
    three times the tokens it thought, and the server's 400 failed the run."""
    n_ctx = 8192
    refused: list[int] = []

    def llama(request: Received) -> Reply:
        said = [m["content"] for m in request.body["messages"]]
        han = sum(1 for text in said for ch in text if ord(ch) > 0x2E80)
        ascii_ = sum(len(text.encode("ascii", "ignore")) for text in said)
        if han + ascii_ // 4 + request.body.get("max_tokens", 0) > n_ctx:
            refused.append(han)
            return Reply(status=400, body=LLAMA_CPP)
        name = request.body["response_format"]["json_schema"]["name"]
        return openai_chat(json.dumps(NOTHING_SAID[name]))

    settings = Settings(models=ModelSettings(context_tokens=n_ctx))
    with FakeProviderServer() as server:
        for _ in range(100):
            server.script(llama)
        h = await Harness.create(time_env, tmp_path, settings=settings)
        h.llm = OpenAIProvider(  # type: ignore[assignment]
            api_key=None,
            base_url=server.openai_base_url,
            timeout=10,
            options=ServerOptions(context_tokens=n_ctx),
        )
        await h.record("s1", chinese(40))
        try:
            async with h.worker():
                summary = await h.form("s1")
        finally:
            await h.llm.close()

    assert refused == []  # nothing sent that the server's context cannot hold
    assert summary.passed_over == 0 and await _cursor(h) == 40
