"""A new fact judged already known (NONE) is dropped only while the stored fact it repeats is
unchanged: when another session changes or retires that fact between the decision and the commit,
the commit is stale and the formation decides again, so what was said is not lost (but a fact a
person deleted after it was said stays deleted). Run step by
step as the FormMemories workflow runs it (its commit retries the decision on StaleDecisionError),
with the offline provider and a real SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from memory.errors import StaleDecisionError
from memory.models import AgentConfig, Fact, FactFilter
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest, Window
from memory.store.sqlite import SQLiteStore
from tests.isolation.bench import T0, Bench

EVE = AgentConfig(agent_id="eve", name="Eve")
NOW = T0 + timedelta(hours=2)


@pytest.fixture
async def bench(tmp_path: Path) -> AsyncIterator[Bench]:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    yield await Bench.create(store, [EVE])
    await store.close()


async def _valid(bench: Bench) -> list[Fact]:
    return await bench.store.list_facts(FactFilter(agent_id="eve", user_id="alice"))


def said_in(fact: Fact, session_id: str) -> list[str]:
    """What the fact records as said in the session: its content or an earlier version."""
    current = [fact.content] if fact.source_session_id == session_id else []
    return current + [r.content for r in fact.history if r.source_session_id == session_id]


async def _window(bench: Bench, session_id: str) -> Window:
    request = FormationRequest(session_id=session_id, agent_id="eve", force=True)
    w = await window.load_window(bench.store, bench.settings, request)
    assert w is not None
    return w


async def _form_once(bench: Bench, w: Window) -> None:
    """One decision and its commit: the workflow's loop body."""
    deps = bench.deps
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    await commit.commit(deps, w, new, decided.decisions, [], NOW, candidates)


@pytest.mark.parametrize("change", ["updated", "retired"])
async def test_a_repeat_of_a_fact_changed_meanwhile_is_decided_again(
    bench: Bench, change: str
) -> None:
    await bench.say("eve", "s1", "I live in Berlin.", user_id="alice")
    await bench.form("s1", "eve")
    [berlin] = await _valid(bench)

    # Session s2 says it again: decided NONE, already known as the stored fact.
    await bench.say("eve", "s2", "I live in Berlin.", user_id="alice")
    w = await _window(bench, "s2")
    deps = bench.deps
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    assert [(d.event, d.existing_id) for d in decided.decisions] == [("NONE", berlin.fact_id)]

    # Before s2 commits, another session moves Alice to Munich (its formation updates the fact),
    # or a person deletes the fact.
    if change == "updated":
        await bench.say("eve", "s3", "I live in Munich.", user_id="alice")
        await bench.form("s3", "eve")
        [moved] = await _valid(bench)
        assert (moved.fact_id, moved.version) == (berlin.fact_id, 2)
        assert "Munich" in moved.content
    else:
        await bench.store.invalidate_fact(berlin.fact_id, at=NOW)
        assert await _valid(bench) == []

    with pytest.raises(StaleDecisionError):
        await commit.commit(deps, w, new, decided.decisions, [], NOW, candidates)
    state = await bench.store.get_session_agent_state("s2", "eve")
    assert state is not None and state.cursor_seq == 0  # nothing written

    # Decided again against what is stored now.
    await _form_once(bench, w)
    if change == "updated":
        # s2's statement is kept, in the history of the fact that says the later one.
        [fact] = await _valid(bench)
        assert any("Berlin" in text for text in said_in(fact, "s2"))
        assert "Munich" in fact.content  # said after s2's statement: it stays current
    else:
        # s2 said it before the person deleted it: it does not bring the fact back
        # (rules.versions.deleted_since).
        assert await _valid(bench) == []
        [deleted] = await bench.store.get_facts([berlin.fact_id])
        assert (deleted.invalidated_at, deleted.version) == (NOW, berlin.version)
    state = await bench.store.get_session_agent_state("s2", "eve")
    assert state is not None and state.cursor_seq == w.upto_seq
