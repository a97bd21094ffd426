"""One attempt of extract_piece_facts reads the window's state once: the read of its piece and
both of its halving checks (its parent's before the model call, its own after a failure) judge
the messages that one read loaded."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.errors import NOT_HALVABLE, halvable
from activities.formation import FormationActivities
from memory.deps import Deps
from memory.llm.heuristic import HeuristicProvider
from memory.models import AgentConfig, MessageIn
from memory.pipeline import window
from memory.pipeline.types import FormationRequest, Window
from memory.settings import Settings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.fakes import WordHashEmbedder
from tests.harness import T0
from tests.pipeline.test_reads_once import CountingStore

# The offline provider answers at most 40 facts: the message and its halves overflow, its
# quarters are answered.
FACTS = 90


def dense(n: int) -> str:
    return " ".join(f"My favourite number {i} is {4100 + i}." for i in range(1, n + 1))


@pytest.fixture
async def dense_window(tmp_path: Path) -> tuple[FormationActivities, CountingStore, Window]:
    sqlite = SQLiteStore(tmp_path / "mnemos.db")
    await sqlite.setup()
    await sqlite.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    said = MessageIn(
        message_id="m0", role="user", user_id="alice", content=dense(FACTS), created_at=T0
    )
    await sqlite.record_messages("s1", "eve", [said], weights={}, chars_per_token=4.0, now=T0)
    store = CountingStore(sqlite)
    settings = Settings()
    deps = Deps(
        settings=settings,
        store=cast(MemoryStore, store),
        llm=HeuristicProvider(),
        embedder=WordHashEmbedder(),
    )
    w = await window.load_window(
        deps.store, settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None and w.message_count == 1
    store.calls.clear()
    return FormationActivities(deps), store, w


async def test_a_piece_read_reads_the_state_once(
    dense_window: tuple[FormationActivities, CountingStore, Window],
) -> None:
    activities, store, w = dense_window
    out = await ActivityEnvironment().run(activities.extract_piece_facts, w, 0, [0, 0])
    assert out.facts and len(out.llm) == 1
    assert store.calls["get_session_agent_state"] == 1


async def test_a_failed_piece_says_it_can_be_halved_from_the_same_read(
    dense_window: tuple[FormationActivities, CountingStore, Window],
) -> None:
    activities, store, w = dense_window
    with pytest.raises(ApplicationError) as failed:
        await ActivityEnvironment().run(activities.extract_piece_facts, w, 0, [0])
    assert failed.value.type == "UnusableOutput" and halvable(failed.value)
    assert store.calls["get_session_agent_state"] == 1


async def test_a_half_of_a_piece_not_halved_is_refused_before_the_model(
    dense_window: tuple[FormationActivities, CountingStore, Window],
) -> None:
    activities, store, w = dense_window
    with pytest.raises(ApplicationError) as refused:
        await ActivityEnvironment().run(activities.extract_piece_facts, w, 0, [])
    assert refused.value.type == NOT_HALVABLE and refused.value.non_retryable
    assert store.calls["get_session_agent_state"] == 1
