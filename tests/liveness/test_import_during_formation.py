"""A mem0 import lands while a formation of the same agent and user is between reading its dedup
candidates and committing, and the formation extracted the same fact in other words: the agent
keeps one fact (README Liveness: a new fact is re-checked at commit against the facts committed
since its candidates were read). The imported fact keeps its source's updated_at, months ago;
the re-check reads it because the store inserted it since (memory.store.rules.recheck)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment

from memory.deps import Deps
from memory.formation_commit import FormationCommit, FormationCommitResult
from memory.lifecycle.mem0 import map_mem0
from memory.lifecycle.writer import write_batch
from memory.llm.base import LLMRequest
from memory.prompts.decide_facts import FactDecision, FactDecisions
from tests.harness import Harness, conversation, facts

pytestmark = pytest.mark.usefixtures("store_backend")

IMPORTED = "Alice drinks green tea every single morning"
FORMED = "Alice drinks green tea each single morning"
MEM0 = [
    {
        "id": "8c2b1f0e-0000-4000-8000-000000000001", "memory": IMPORTED, "user_id": "alice",
        "agent_id": "eve", "created_at": "2025-07-20T01:30:00-07:00",
    }
]  # fmt: skip


def same_when_shown(request: LLMRequest) -> FactDecisions:
    """The model sees a new fact shown a stored candidate as that fact (NONE), else ADDs it."""
    task: Any = request.task_input
    shown = {index: e.index for e in task.existing for index in e.candidate_for}
    return FactDecisions(
        decisions=[
            FactDecision(
                new_fact_index=f.index,
                event="NONE" if f.index in shown else "ADD",
                existing_index=shown.get(f.index),
                merged_text=None,
            )
            for f in task.new_facts
        ]
    )


class ImportBeforeFirstCommit:
    """The worker's store: the import runs once, just before the formation commits (after its
    candidates were read)."""

    def __init__(self, h: Harness) -> None:
        self._h = h
        self._imported = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._h.store, name)

    async def commit_formation(self, commit: FormationCommit) -> FormationCommitResult:
        if not self._imported:
            self._imported = True
            await _import(self._h)
        return await self._h.store.commit_formation(commit)


async def _import(h: Harness) -> None:
    # The test's own store, not the worker's (whose commit runs this import).
    deps = Deps(settings=h.settings, store=h.store, llm=h.llm, embedder=h.embedder)
    batch = map_mem0(MEM0, default_agent="eve", now=datetime.now(UTC))
    report = await write_batch(deps, batch, now=datetime.now(UTC))
    assert report.counts["facts"].inserted == 1


async def test_a_fact_imported_during_a_formation_is_not_formed_again(
    time_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    h = await Harness.create(time_env, tmp_path)
    h.llm.defaults["decide_facts"] = same_when_shown
    h.llm.script("extract_facts", facts((FORMED, "user"), sources=[1]))
    await h.record("s1", conversation(2))
    h.worker_store = ImportBeforeFirstCommit(h)  # type: ignore[assignment]
    async with h.worker():
        await h.form("s1")

    teas = [f.content for f in await h.all_facts("alice") if "green tea" in f.content]
    # The commit was decided again, the imported fact now its candidate: NONE.
    assert teas == [IMPORTED]
