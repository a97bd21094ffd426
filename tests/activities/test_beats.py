"""A beater repeats what its attempt last recorded, not what the attempt started with: Temporal
keeps an attempt's last heartbeat only, and the next attempt reads it (why an answer was
rejected, what the attempts paid for)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio.testing import ActivityEnvironment

from activities import beats
from activities.heartbeat import heartbeating
from activities.paid import paying
from memory.llm.base import LLMProvider, LLMRequest, LLMResult, Usage
from memory.models import AgentConfig
from memory.prompts.extract_facts import ExtractedFacts, ExtractFactsInput


async def test_a_beat_after_a_record_repeats_the_record() -> None:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info, heartbeat_timeout=timedelta(seconds=0.3), heartbeat_details=["earlier", 1]
    )
    sent: list[tuple[Any, ...]] = []
    beaten = asyncio.Event()

    def heartbeat(*details: Any) -> None:
        sent.append(details)
        if len(sent) >= 2:  # the record, then a beater's beat after it
            beaten.set()

    env.on_heartbeat = heartbeat

    async def attempt() -> None:
        beats.send("rejected: not JSON", 2, [["extract_facts", "p", "m", 9, 3]])
        await beaten.wait()  # the model's next call: the beater beats meanwhile

    async def run() -> None:
        await heartbeating(attempt())

    await asyncio.wait_for(env.run(run), timeout=10)
    record = ("rejected: not JSON", 2, [["extract_facts", "p", "m", 9, 3]])
    assert sent[0] == record and sent[-1] == record


class _Answers(LLMProvider):
    """Answers every request with nothing, at a cost."""

    name = "answers"

    async def generate_structured[M: BaseModel](
        self, request: LLMRequest, schema: type[M]
    ) -> LLMResult[M]:
        usage = Usage(provider=self.name, model="m1", input_tokens=1200, output_tokens=300)
        return LLMResult[M](value=schema.model_validate({"facts": []}), usage=usage)


async def test_a_beat_after_an_answer_carries_what_it_cost() -> None:
    # A step that then timed out hands the workflow its last heartbeat (workflows/paid.py): the
    # answers the attempt was paid for must be in it, not only what it inherited.
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timedelta(seconds=0.3))
    sent: list[tuple[Any, ...]] = []
    beaten = asyncio.Event()

    def heartbeat(*details: Any) -> None:
        sent.append(details)
        beaten.set()

    env.on_heartbeat = heartbeat
    request = LLMRequest.of(
        ExtractFactsInput(agent=AgentConfig(agent_id="eve", name="Eve"), messages=[], max_words=20),
        model="m1",
    )

    async def attempt() -> None:
        with paying():
            await _Answers().generate_structured(request, ExtractedFacts)
            await beaten.wait()  # the model's next call, which runs past the step's timeout

    async def run() -> None:
        await heartbeating(attempt())

    await asyncio.wait_for(env.run(run), timeout=10)
    assert sent[-1] == (None, 0, [["extract_facts", "answers", "m1", 1200, 300]])
