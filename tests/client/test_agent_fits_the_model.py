"""An agent whose persona and memory instructions cannot fit the configured small model's context
beside its memory is refused when saved, with the reason, and nothing is written: it would
otherwise be found by every window, whose reflections would all be passed over."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.errors import InvalidInputError
from memory.models import AgentConfig
from memory.settings import ModelSettings
from tests.harness import Harness

# Each within AgentConfig's 4,000 characters; together past what 8,192 tokens leave beside the
# memory at its default word limits.
LONG = "the team plans the festival budget with every vendor " * 70


async def test_a_persona_too_long_for_the_models_context_is_refused_and_nothing_is_written(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path, models=ModelSettings(context_tokens=8192))
    long_agent = AgentConfig(
        agent_id="ann", name="Ann", persona=LONG[:3900], memory_instructions=LONG[:3900]
    )
    with pytest.raises(InvalidInputError, match="MNEMOS_MODELS__CONTEXT_TOKENS") as refused:
        await h.memory.register_agent(long_agent)
    assert "persona" in str(refused.value)
    assert await h.store.get_agent("ann") is None

    with pytest.raises(InvalidInputError, match="shorten them"):
        await h.memory.update_agent("eve", persona=LONG[:3900], memory_instructions=LONG[:3900])
    # A change of one field is checked with the other as stored: each fits alone, not both.
    await h.memory.update_agent("eve", memory_instructions=LONG[:1200])
    with pytest.raises(InvalidInputError, match="persona"):
        await h.memory.update_agent("eve", persona=LONG[:1200])
    stored = await h.store.get_agent("eve")
    assert stored == h.agent.model_copy(update={"memory_instructions": LONG[:1200]})


async def test_an_ordinary_persona_and_any_persona_on_a_hosted_model_are_accepted(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    small = await Harness.create(time_env, tmp_path, models=ModelSettings(context_tokens=8192))
    persona = "A festival producer's assistant: short answers, in English. " * 10
    await small.memory.update_agent("eve", persona=persona)
    assert (await small.store.get_agent("eve")) == small.agent.model_copy(
        update={"persona": persona}
    )
    await small.store.close()
    hosted = await Harness.create(time_env, tmp_path / "hosted")
    long_agent = AgentConfig(
        agent_id="ann", name="Ann", persona=LONG[:3900], memory_instructions=LONG[:3900]
    )
    await hosted.memory.register_agent(long_agent)
    assert await hosted.store.get_agent("ann") == long_agent
