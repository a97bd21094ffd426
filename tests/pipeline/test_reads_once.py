"""A formation pass reads once: the agent with the window, the transcript once for both LLM steps,
and the commit takes its vectors from the embedding cache the decide step filled (it never calls
the embedder). Run step by step, as the workflow does, on a real SQLite store."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from memory.deps import Deps
from memory.errors import StaleDecisionError
from memory.models import AgentConfig
from memory.pipeline import commit, dedup, facts, reflections, window
from memory.pipeline.types import FormationRequest
from memory.settings import Settings
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder
from tests.harness import T0, conversation
from tests.harness import facts as extracted
from tests.harness import reflections as extracted_reflections

NOW = datetime(2026, 11, 2, tzinfo=UTC)


class CountingStore:
    """The store, counting the calls of each method."""

    def __init__(self, target: MemoryStore) -> None:
        self._target = target
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted


@pytest.fixture
async def setup(tmp_path: Path) -> tuple[Deps, CountingStore, WordHashEmbedder]:
    sqlite = SQLiteStore(tmp_path / "mnemos.db")
    await sqlite.setup()
    await sqlite.upsert_agent(AgentConfig(agent_id="eve", name="Eve"))
    await sqlite.record_messages(
        "s1", "eve", conversation(4), weights={}, chars_per_token=4.0, now=T0
    )
    store = CountingStore(sqlite)
    embedder = WordHashEmbedder()
    llm = ScriptedLLM(
        defaults={
            "extract_facts": extracted(("Alice lives in Paris", "user")),
            "extract_reflections": extracted_reflections(session=["planning a trip"]),
        }
    )
    deps = Deps(settings=Settings(), store=cast(MemoryStore, store), llm=llm, embedder=embedder)
    return deps, store, embedder


async def test_a_pass_reads_the_agent_and_the_transcript_once(
    setup: tuple[Deps, CountingStore, WordHashEmbedder],
) -> None:
    deps, store, embedder = setup
    w = await window.load_window(
        deps.store, deps.settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None and w.agent is not None and w.agent.name == "Eve"

    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    refl = await reflections.extract_reflections(deps, w, [f.content for f in new])
    embeds_before_commit = len(embedder.calls)
    result = await commit.commit(deps, w, new, decided.decisions, refl.reflections, NOW)

    assert store.calls["get_agent"] == 1  # by load_window, carried by the window
    assert store.calls["load_messages"] == 1  # shared by extract_facts and extract_reflections
    assert len(embedder.calls) == embeds_before_commit  # the commit embedded nothing
    assert (result.facts_added, result.reflections_added) == (1, 1)
    assert result.embedding_calls == 0


async def test_a_commit_without_cached_vectors_asks_for_a_new_decision(
    setup: tuple[Deps, CountingStore, WordHashEmbedder],
) -> None:
    deps, _, embedder = setup
    w = await window.load_window(
        deps.store, deps.settings, FormationRequest(session_id="s1", agent_id="eve", force=True)
    )
    assert w is not None
    new = (await facts.extract_facts(deps, w)).facts
    candidates = await facts.find_candidates(deps, w, new)
    decided = await dedup.decide(deps, w, new, candidates)
    # Another embedding model between decide and commit: the cached vectors are not its own.
    embedder.model = "another-model"
    with pytest.raises(StaleDecisionError, match="decide again"):
        await commit.commit(deps, w, new, decided.decisions, [], NOW)
    state = await deps.store.get_session_agent_state("s1", "eve")
    assert state is not None and state.cursor_seq == 0  # nothing written
