"""A correction said within one window is decided as it would be across two: the later statement
is the fact, the earlier one its history (the offline provider, a real SQLite store, formation
step by step as the workflow runs it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memory.models import AgentConfig, Fact, FactFilter
from memory.pipeline.decision_order import through_window
from memory.pipeline.predecide import REFUSED
from memory.pipeline.types import Decision, Window
from memory.store.sqlite import SQLiteStore
from tests.isolation.bench import Bench

EVE = AgentConfig(agent_id="eve", name="Eve")


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    yield await Bench.create(store, [EVE])
    await store.close()


async def _facts(bench: Bench) -> list[Fact]:
    return await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))


async def test_a_correction_within_one_window_updates_the_fact_it_corrects(bench: Bench) -> None:
    for text in (
        "My phone number is 555-1234.",
        "Sorry, my phone number is 555-9999.",
        "Now my phone number is 555-0000.",
    ):
        await bench.say("eve", "s1", text, user_id="alice")
    await bench.form("s1", "eve")

    [fact] = await _facts(bench)
    assert "555-0000" in fact.content and fact.version == 3
    assert ["555-1234" in r.content or "555-9999" in r.content for r in fact.history] == [
        True,
        True,
    ]
    # Every statement cited, each by the version it said: the current one by m3 alone.
    assert fact.source_message_ids == ("m3",)
    assert [r.source_message_ids for r in fact.history] == [("m1",), ("m2",)]


async def test_distinct_facts_of_one_window_stay_distinct(bench: Bench) -> None:
    await bench.say("eve", "s1", "My phone number is 555-1234.", user_id="alice")
    await bench.say("eve", "s1", "My office is in room 204 on floor 2.", user_id="alice")
    await bench.form("s1", "eve")

    assert len(await _facts(bench)) == 2


def _window() -> Window:
    return Window(
        formation_id="eve:s1:0-3", session_id="s1", agent_id="eve", user_id="alice",
        after_seq=0, upto_seq=3, message_count=3, fact_scopes=("user",),
        reflection_scopes=("session",),
    )  # fmt: skip


def test_a_decision_about_an_earlier_new_fact_goes_to_the_fact_that_holds_it() -> None:
    from memory import ids

    w = _window()
    earlier = ids.fact_id(w.formation_id, 0)
    decided = through_window(
        w,
        [
            # New fact 0 states stored fact "f9" again; 1 and 2 correct new fact 0.
            Decision(new_index=0, event="NONE", existing_id="f9", expected_version=4),
            Decision(new_index=1, event="UPDATE", existing_id=earlier, expected_version=1),
            Decision(new_index=2, event="UPDATE", existing_id=ids.fact_id(w.formation_id, 1),
                     expected_version=1),
        ],
    )  # fmt: skip
    assert [(d.event, d.existing_id, d.expected_version) for d in decided] == [
        ("NONE", "f9", 4),
        ("UPDATE", "f9", 4),
        ("UPDATE", "f9", 4),
    ]
    # A NONE that names nothing holds nothing: the later change is refused, its fact added.
    [_, refused] = through_window(
        w,
        [
            Decision(new_index=0, event="NONE"),
            Decision(new_index=1, event="UPDATE", existing_id=earlier, expected_version=1),
        ],
    )
    assert refused.event == "ADD" and refused.reasoning.startswith(REFUSED)
