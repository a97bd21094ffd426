from __future__ import annotations

from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from tests.harness import Harness, conversation, facts, reflections


async def test_formation_stores_facts_and_reflections_and_moves_cursor(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    await h.record("s1", conversation(6))
    h.llm.script(
        "extract_facts",
        facts(
            ("Alice works at Acme Robotics as CTO", "user"),
            ("The Mars Festival budget is $50,000", "agent"),
        ),
    )
    h.llm.script(
        "extract_reflections",
        reflections(user=["Alice prefers short answers"], session=["Planning the festival venue"]),
    )
    async with h.worker():
        summary = await h.form("s1")
    assert summary.formations == 1
    assert summary.facts_added == 2
    stored = await h.all_facts()
    assert sorted(f.content for f in stored) == [
        "Alice works at Acme Robotics as CTO",
        "The Mars Festival budget is $50,000",
    ]
    state = await h.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 6 and state.pending_messages == 0
    assert [r.content for r in await h.buffered(h.key("user"))] == ["Alice prefers short answers"]
