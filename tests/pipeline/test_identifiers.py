"""Issue #21, "identifiers are not values", through the pipeline's own steps (load the window,
extract, find candidates, decide, commit) with the offline provider on a SQLite store: statements
about other numbers never replace each other; a new value of the same one does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, FactFilter, MessageIn
from memory.pipeline import commit, dedup, facts, window
from memory.pipeline.types import FormationRequest
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.realmodel.identifier_cases import CASES, Case
from tests.realmodel.identifier_cases import window as case_window

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def said(n: int, text: str) -> MessageIn:
    return MessageIn(
        message_id=f"m{n:03d}",
        role="user",
        name="Alice",
        content=text,
        created_at=T0 + timedelta(minutes=n),
        user_id="alice",
    )


@pytest.fixture
async def deps(tmp_path: Path) -> Deps:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    await store.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    embedder = WordHashEmbedder()
    return Deps(settings=Settings(), store=store, llm=HeuristicProvider(), embedder=embedder)


async def form(deps: Deps, session: str, texts: dict[int, str]) -> dict[str, int]:
    """Record the messages and form their window; the events decided, and how many facts had
    stored candidates (so were decided by the rules, not added for want of any)."""
    messages = [said(n, text) for n, text in texts.items()]
    await deps.store.record_messages(
        session, "eve", messages, weights={"user": 1.0}, chars_per_token=4.0, now=T0
    )
    req = FormationRequest(session_id=session, agent_id="eve", force=True)
    w = await window.load_window(deps.store, deps.settings, req)
    assert w is not None
    new = (await facts.extract_facts(deps, w)).facts
    assert len(new) == len(texts)
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    await commit.commit(deps, w, new, decided.decisions, [], T0 + timedelta(days=1))
    events: dict[str, int] = {"contested": len(candidates.by_new_index)}
    for d in decided.decisions:
        events[d.event] = events.get(d.event, 0) + 1
    return events


async def test_thirty_favourite_numbers_then_thirty_others_keep_all_sixty(deps: Deps) -> None:
    first = await form(
        deps, "s1", {n: f"My favourite number {n} is {7 * n}." for n in range(1, 31)}
    )
    second = await form(
        deps, "s2", {n: f"My favourite number {n} is {7 * n}." for n in range(31, 61)}
    )

    assert first["ADD"] == 30
    assert second == {"contested": 30, "ADD": 30}  # each one was compared, none replaced
    valid = await deps.store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=200)
    assert sorted(f.content for f in valid) == sorted(
        f"Alice's favourite number {n} is {7 * n}." for n in range(1, 61)
    )
    assert {f.version for f in valid} == {1}

    # A new value of one of them is a correction of that one alone.
    third = await form(deps, "s3", {61: "My favourite number 17 is 120."})
    assert third == {"contested": 1, "UPDATE": 1}
    valid = await deps.store.list_facts(FactFilter(agent_id="eve", user_id="alice"), limit=200)
    assert len(valid) == 60
    [seventeen] = [f for f in valid if "number 17 " in f.content]
    assert (seventeen.content, seventeen.version) == ("Alice's favourite number 17 is 120.", 2)
    assert [r.content for r in seventeen.history] == ["Alice's favourite number 17 is 119."]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_the_recorded_cases_decided_by_the_rules(deps: Deps, case: Case) -> None:
    decided = await dedup.decide(deps, case_window(), case.facts(), case.candidates())
    assert tuple(d.event for d in decided.decisions) == case.right
