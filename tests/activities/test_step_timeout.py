"""The second looks of extract_facts (memory/pipeline/rereads.py) end within the timeout the
step actually runs under, which the workflow's input sets, whatever the worker's own setting
says: an operator who shortens the step's timeout where formations start, not on the workers,
must not get steps that time out and are asked again, window and all."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta
from pathlib import Path

from temporalio.testing import ActivityEnvironment

from activities.formation import FormationActivities
from memory.deps import Deps
from memory.llm.base import LLMRequest
from memory.prompts.extract_facts import ExtractedFacts
from memory.settings import FactSettings, RetrySettings, Settings
from tests.activities.test_paid_attempts import _window
from tests.fakes import ScriptedLLM, WordHashEmbedder


async def _slow(_: LLMRequest) -> ExtractedFacts:
    await asyncio.sleep(0.4)  # a model's latency, not a wait for anything
    return ExtractedFacts(facts=[])


async def _calls(tmp_path: Path, step_timeout: timedelta) -> int:
    """How many model calls one extract_facts attempt makes, run under ``step_timeout`` by a
    worker whose own setting is the default (180 s)."""
    settings = Settings(
        facts=FactSettings(reread_messages=3), retries=RetrySettings(llm_timeout_seconds=180)
    )
    store, w = await _window(tmp_path, 4)  # four messages, each with a code no fact writes
    llm = ScriptedLLM()
    llm.script("extract_facts", *([_slow] * 4))
    deps = Deps(settings=settings, store=store, llm=llm, embedder=WordHashEmbedder())
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, start_to_close_timeout=step_timeout)
    try:
        await env.run(FormationActivities(deps).extract_facts, w)
    finally:
        await store.close()
    return len(llm.calls("extract_facts"))


async def test_a_short_step_timeout_leaves_no_time_for_second_looks(tmp_path: Path) -> None:
    # Half of a 1 s step is gone once the window's own call (0.4 s) and one as long would end.
    assert await _calls(tmp_path, timedelta(seconds=1)) == 1


async def test_a_long_step_timeout_lets_each_passed_over_message_be_read_again(
    tmp_path: Path,
) -> None:
    assert await _calls(tmp_path, timedelta(seconds=60)) == 4
