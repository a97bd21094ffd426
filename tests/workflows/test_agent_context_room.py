"""The longest persona an 8,192-token model accepts (memory/prompt_budget.py) still lets every
window form its reflections, with each scope's memory at its word limit and its most recent
reflections shown: what is refused when saved is what would not fit, measured as
memory/llm/context_fit.py measures the prompt it sends."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.openai_provider import OpenAIProvider, ServerOptions
from memory.models import AgentConfig, MessageIn, Reflection, ScopeKey
from memory.prompt_budget import agent_problem
from memory.settings import ModelSettings, ReflectionSettings, Settings
from tests.fake_provider_server import FakeProviderServer, Received, Reply, openai_chat
from tests.harness import T0, Harness
from tests.realmodel.replay import task_of

# Ordinary words of five letters.
VOCAB = [
    "alice",
    "plans",
    "short",
    "trips",
    "books",
    "hotel",
    "early",
    "likes",
    "quiet",
    "rooms",
    "close",
    "parks",
]
ANSWERS = {
    "extract_facts": {
        "facts": [
            {
                "content": "Alice moved to Lisbon",
                "scope": "user",
                "speaker": "alice",
                "sources": [1],
            }
        ]
    },
    "extract_reflections": {
        "agent_reflections": [],
        "session_reflections": [],
        "user_reflections": [
            {"content": "Alice settles in Lisbon", "speaker": "alice", "sources": [1]}
        ],
    },
}


def text(words: int) -> str:
    return " ".join(VOCAB[i % len(VOCAB)] for i in range(words))


def answer(request: Received) -> Reply:
    return openai_chat(json.dumps(ANSWERS.get(task_of(request), {"decisions": []})))


def longest_accepted(settings: Settings) -> AgentConfig:
    """Eve with the longest persona (and as long instructions) the check lets through."""
    chars = 4000
    while agent_problem(settings, agent := _eve(chars)) is not None:
        chars -= 50
    return agent


def _eve(chars: int) -> AgentConfig:
    return AgentConfig(
        agent_id="eve",
        name="Eve",
        persona=text(700)[: chars // 2],
        memory_instructions=text(700)[: chars // 2],
    )


async def _fill(h: Harness, key: ScopeKey, scope: str) -> None:
    """The scope's blob at its word limit and overshoot, its most recent reflections shown."""
    cfg = h.settings.reflections
    limit = int(cfg.word_limit(scope) * (1 + cfg.word_limit_tolerance))  # type: ignore[arg-type]
    await h.memory.manager.edit_consolidated(key, text(limit))
    await h.store.import_reflections(
        [
            Reflection(
                reflection_id=f"{scope}{i}",
                scope_key=key,
                content=text(cfg.max_words),
                source_session_id="old",
                formed_at=T0 - timedelta(days=1),
            )
            for i in range(cfg.recent_in_context)
        ]
    )


async def test_the_longest_persona_accepted_on_an_8k_model_forms_reflections_with_memory_full(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    with FakeProviderServer() as server:
        server.script(*[answer] * 100)
        # No consolidation: the buffers are past their thresholds, and what is tested is the
        # formation's prompt (a consolidation left running would hold the test server's clock).
        quiet = ReflectionSettings(
            threshold_agent=1000, threshold_user=1000, threshold_session=1000
        )
        h = await Harness.create(
            time_env, tmp_path, models=ModelSettings(context_tokens=8192), reflections=quiet
        )
        h.llm = OpenAIProvider(  # type: ignore[assignment]
            api_key=None,
            base_url=server.openai_base_url,
            options=ServerOptions(context_tokens=8192),
        )
        eve = longest_accepted(h.settings)
        assert len(eve.persona) > 500  # room is left for an ordinary persona
        await h.memory.register_agent(eve)
        await h.record(
            "s1",
            [
                MessageIn(message_id="m1", role="user", user_id="alice",
                          content="I moved to Lisbon last week.", created_at=T0),
                MessageIn(message_id="m2", role="agent", content="Welcome to Lisbon!",
                          created_at=T0 + timedelta(minutes=1)),
            ],
        )  # fmt: skip
        await _fill(h, ScopeKey.agent("eve"), "agent")
        await _fill(h, ScopeKey.user("eve", "alice"), "user")
        await _fill(h, ScopeKey.session("eve", "s1"), "session")
        async with h.worker():
            summary = await h.form("s1")
    assert not summary.degraded, summary.degraded
    assert summary.reflections_added == 1
