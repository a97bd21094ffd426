"""An agent's memory switches govern what is said while they hold (memory/switch_marks.py), not
what a formation running later finds: turned on again, user memory does not take in a private
detail told while it was off; turned off for a moment, it does not lose what was told while it
was on. Through the real workflows, the offline provider extracting."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.llm.heuristic import HeuristicProvider
from memory.models import MessageIn
from tests.harness import T0, Harness

# On SQLite and PostgreSQL alike (the marks are the store's: its contract tests run on MongoDB).
pytestmark = pytest.mark.usefixtures("store_backend")


def said(i: int, role: str, content: str) -> MessageIn:
    return MessageIn(
        message_id=f"m{i}",
        role=role,
        content=content,
        created_at=T0 + timedelta(minutes=i),
        user_id="alice" if role == "user" else None,
    )


async def _user_facts(h: Harness) -> list[str]:
    return [f.content for f in await h.all_facts() if f.scope == "user"]


async def test_a_detail_told_while_user_memory_was_off_stays_out_once_it_is_on(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    async with h.worker():
        await h.memory.update_agent("eve", user_memory_enabled=False)
        # Two messages: below the formation thresholds, nothing forms while the switch is off.
        await h.record(
            "s1",
            [
                said(0, "user", "My email is alice.private@example.com"),
                said(1, "agent", "Thanks, noted."),
            ],
        )
        assert not (await h.memory.maybe_form_memories("eve", "s1")).started
        await h.memory.update_agent("eve", user_memory_enabled=True)
        await h.record(
            "s1",
            [said(2, "user", "I like hiking in the Alps on weekends"), said(3, "agent", "Lovely.")],
        )
        await h.form("s1")
        context = await h.memory.on_session_start("eve", "s2", user_id="alice")

    user_facts = await _user_facts(h)
    assert not any("alice.private@example.com" in f for f in user_facts), user_facts
    assert "alice.private@example.com" not in context
    # What she said once it was on again is hers, as usual.
    assert any("hiking" in f.lower() for f in user_facts), user_facts


async def test_a_detail_told_while_user_memory_was_on_outlives_a_moment_off(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm = HeuristicProvider()  # type: ignore[assignment]
    async with h.worker():
        await h.record(
            "s1",
            [
                said(0, "user", "My email is alice.work@example.com"),
                said(1, "agent", "Thanks, noted."),
            ],
        )
        await h.memory.update_agent("eve", user_memory_enabled=False)
        await h.record(
            "s1", [said(2, "user", "My email is alice.off@example.com"), said(3, "agent", "Ok.")]
        )
        # Formed while the switch is off: each part under the switches it was recorded under.
        await h.form("s1")
        await h.memory.update_agent("eve", user_memory_enabled=True)
        context = await h.memory.on_session_start("eve", "s2", user_id="alice")

    user_facts = await _user_facts(h)
    assert any("alice.work@example.com" in f for f in user_facts), user_facts
    assert "alice.work@example.com" in context
    assert not any("alice.off@example.com" in f for f in user_facts), user_facts
