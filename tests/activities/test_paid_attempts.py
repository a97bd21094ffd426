"""What an LLM step's attempts paid for travels with the step (activities/paid.py): an attempt that
fails after answers were returned sends them on in its last heartbeat, the next attempt reports
them with its own, and the step's error carries them, after what older code reads."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.errors import classified, halvable
from activities.formation import FormationActivities
from activities.paid import Paid, paying
from memory import tracing
from memory.deps import Deps
from memory.errors import InputRefusedError, MalformedOutputError
from memory.llm.base import LLMRequest
from memory.llm_usage import Usage
from memory.models import AgentConfig, MessageIn
from memory.pipeline import window
from memory.pipeline.types import ExtractedFactsResult, FormationRequest, LlmCall, Window
from memory.pipeline.usage import ERROR_USAGE, HEARTBEAT_USAGE, carried
from memory.prompts.extract_facts import ExtractedFact, ExtractedFacts
from memory.settings import FactSettings, Settings
from memory.store.sqlite import SQLiteStore
from runtime.payloads import payload_data_converter
from tests.fakes import FACTS_INPUT, ScriptedLLM, WordHashEmbedder, transient

AT = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
BILLED = Usage(provider="scripted", model="m", input_tokens=300, output_tokens=40)
REJECTED = LlmCall(
    task="extract_facts", provider="scripted", model="m", input_tokens=300, output_tokens=40
)
FACT = ExtractedFacts(facts=[ExtractedFact(content="Alice's door code is 4411", scope="user")])


def _env(attempt: int, details: Sequence[Any]) -> tuple[ActivityEnvironment, list[tuple[Any, ...]]]:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        attempt=attempt,
        heartbeat_details=details,
        heartbeat_timeout=timedelta(seconds=30),
        start_to_close_timeout=timedelta(seconds=60),
    )
    beats: list[tuple[Any, ...]] = []
    env.on_heartbeat = lambda *d: beats.append(d)
    return env, beats


def _json(details: Sequence[Any]) -> list[Any]:
    """As the next attempt (or the workflow) reads them: through the worker's payload converter."""
    converter = payload_data_converter.payload_converter
    return converter.from_payloads(converter.to_payloads(list(details)))


async def _window(tmp_path: Path, messages: int) -> tuple[SQLiteStore, Window]:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    said = [
        MessageIn(
            message_id=f"r{n}", role="user", user_id="alice", name="Alice",
            content=f"The code for door {n} is {n}{n}{n}{n}.", created_at=AT + timedelta(minutes=n),
        )
        for n in range(1, messages + 1)
    ]  # fmt: skip
    await store.record_messages("s1", "eve", said, weights={}, chars_per_token=4.0, now=AT)
    req = FormationRequest(session_id="s1", agent_id="eve", force=True)
    w = await window.load_window(store, Settings(), req)
    assert w is not None
    return store, w


def _deps(store: SQLiteStore, llm: ScriptedLLM, reread: int = 0) -> Deps:
    settings = Settings(facts=FactSettings(reread_messages=reread))
    return Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())


async def test_a_rejected_answer_is_carried_to_the_attempt_that_succeeds(tmp_path: Path) -> None:
    store, w = await _window(tmp_path, 1)

    def cut_off(request: LLMRequest) -> None:
        raise MalformedOutputError("output is not JSON", provider="scripted", usage=BILLED)

    llm = ScriptedLLM()
    llm.script("extract_facts", cut_off, FACT)
    step = FormationActivities(_deps(store, llm)).extract_facts
    try:
        first, beats = _env(1, [])
        with pytest.raises(ApplicationError) as failed:
            await first.run(step, w)
        # Its last heartbeat: why, how many (what older workers read), then what it paid for.
        [beat] = beats
        assert beat[:HEARTBEAT_USAGE] == ("output is not JSON", 1)
        assert carried(_json(beat), HEARTBEAT_USAGE) == [REJECTED]
        # Its error: whether the message can be halved first (older workflow code reads it
        # there), then the usage.
        err = failed.value
        assert err.details[0] is False and not halvable(err)
        assert carried(_json(err.details), ERROR_USAGE) == [REJECTED]

        second, beats = _env(2, _json(beat))
        out = await second.run(step, w)
    finally:
        await store.close()
    assert [f.content for f in out.facts] == ["Alice's door code is 4411"]
    assert len(out.llm) == 2 and out.llm[0] == REJECTED
    assert out.llm[1].task == "extract_facts" and out.llm[1].output_tokens == 10
    assert beats == []  # it failed nothing


async def test_a_second_look_whose_answer_is_unusable_is_reported(tmp_path: Path) -> None:
    """The window's answer passes over every message; of the three read again alone, one is
    answered unusably (skipped, the window's answer stands), one refused (no answer)."""
    store, w = await _window(tmp_path, 4)

    def cut_off(request: LLMRequest) -> None:
        raise MalformedOutputError("output is not JSON", provider="scripted", usage=BILLED)

    def refused(request: LLMRequest) -> None:
        raise InputRefusedError("refused", provider="scripted")

    llm = ScriptedLLM()
    llm.script("extract_facts", ExtractedFacts(facts=[]), cut_off, refused, FACT)
    try:
        env, _ = _env(1, [])
        out = await env.run(FormationActivities(_deps(store, llm, reread=3)).extract_facts, w)
    finally:
        await store.close()
    assert len(llm.calls("extract_facts")) == 4
    assert len(out.llm) == 3 and REJECTED in out.llm  # the refused request returned no answer


async def test_a_failure_after_an_answer_keeps_the_inherited_record_and_adds_the_usage() -> None:
    """A provider failing on the second of two calls: the first was paid for. The record the
    attempt inherited (a rejection by an earlier attempt) is sent on unchanged."""
    llm = ScriptedLLM()
    llm.script("extract_facts", FACT, transient())
    request = LLMRequest.of(FACTS_INPUT, model="m")
    earlier = LlmCall(
        task="decide_facts", provider="scripted", model="m", input_tokens=9, output_tokens=1
    )

    async def two_calls() -> None:
        with paying(), classified():
            await llm.generate_structured(request, ExtractedFacts)
            await llm.generate_structured(request, ExtractedFacts)

    env, beats = _env(
        3, ["existing index 3 was not offered", 1, [["decide_facts", "scripted", "m", 9, 1]]]
    )
    # The worker's metrics' collector, around the attempt.
    with tracing.answers_returned() as metered, pytest.raises(ApplicationError) as failed:
        await env.run(two_calls)
    [beat] = beats
    assert beat[:HEARTBEAT_USAGE] == ("existing index 3 was not offered", 1)
    paid = carried(_json(beat), HEARTBEAT_USAGE)
    assert paid[0] == earlier and [c.task for c in paid] == ["decide_facts", "extract_facts"]
    assert failed.value.details[0] is None
    assert carried(failed.value.details, ERROR_USAGE) == paid
    assert failed.value.type == "ProviderError" and not failed.value.non_retryable
    # The metrics' collector still sees the answer: collectors chain, none hides another's.
    assert [a.task for a in metered] == ["extract_facts"]


async def test_an_attempt_that_paid_for_nothing_heartbeats_and_fails_as_before() -> None:
    async def fails() -> None:
        with paying(), classified():
            raise transient()

    env, beats = _env(2, ["not JSON", 1])
    with pytest.raises(ApplicationError) as failed:
        await env.run(fails)
    assert beats == [] and failed.value.details == ()


@pytest.mark.parametrize(
    "details",
    [[], ["not JSON"], ["not JSON", 1], ["not JSON", 1, "another build's value"], [None, 0, [[1]]]],
)
def test_details_without_usage_carry_none(details: list[Any]) -> None:
    assert carried(details, HEARTBEAT_USAGE) == []


async def test_collectors_chain_across_tasks() -> None:
    llm = ScriptedLLM()
    llm.script("extract_facts", FACT)
    request = LLMRequest.of(FACTS_INPUT, model="m")
    with tracing.answers_returned() as outer, tracing.answers_returned() as inner:
        await asyncio.create_task(llm.generate_structured(request, ExtractedFacts))
    assert len(outer) == len(inner) == 1


def test_a_call_the_collector_never_saw_keeps_the_cores_report() -> None:
    # A provider the tracing wrapper does not wrap (patched on an instance, say) returns answers
    # no collector records: the result still reports the calls its core used, and the earlier
    # attempts' before them, never fewer.
    used = LlmCall(task="extract_facts", provider="p", model="m", input_tokens=9, output_tokens=3)
    earlier = used.model_copy(update={"input_tokens": 7})
    out = ExtractedFactsResult(facts=[], llm=[used])
    assert Paid(earlier=[earlier]).reported(out).llm == [earlier, used]
