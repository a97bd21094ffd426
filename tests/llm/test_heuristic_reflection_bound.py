"""The offline provider answers within its schema's bound of reflections: nine standing
instructions pasted in one message are remembered, every one (the ninth said in the eighth
reflection), not passed over; said over two messages, every one, each message read alone. A real
workflow and store."""

from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from memory.llm.heuristic import HeuristicProvider
from memory.settings import ReflectionSettings
from tests.harness import Harness
from tests.workflows.test_long_message import said

DIRECTIVES = [
    "Please always answer in French.",
    "Please never use emoji.",
    "Please always cite sources.",
    "Please always keep answers short.",
    "Please never schedule calls before 10am.",
    "Please always use metric units.",
    "Please always name the weekday of a date.",
    "Please always sign off with a smiley.",
    "Please always use the 24 hour clock.",
]


async def remembered(env: WorkflowEnvironment, tmp_path: Path, messages: list[str]) -> list[str]:
    # Buffered, not consolidated: what was kept is read as it was formed.
    h = await Harness.create(env, tmp_path, reflections=ReflectionSettings(threshold_user=20))
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    await h.record("s1", [said(content, i) for i, content in enumerate(messages)])
    async with h.worker():
        summary = await h.form("s1")
        user = [r.content for r in await h.buffered(h.key("user"))]
    assert summary.degraded == [], summary.degraded
    return user


async def test_nine_instructions_in_one_message_are_remembered(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    user = await remembered(time_env, tmp_path / "one", [" ".join(DIRECTIVES)])
    folded = f"Alice said: {DIRECTIVES[7]} Alice said: {DIRECTIVES[8]}"
    assert user == [f"Alice said: {d}" for d in DIRECTIVES[:7]] + [folded]

    user = await remembered(
        time_env, tmp_path / "two", [" ".join(DIRECTIVES[:5]), " ".join(DIRECTIVES[5:])]
    )
    assert sorted(user) == sorted(f"Alice said: {d}" for d in DIRECTIVES)
