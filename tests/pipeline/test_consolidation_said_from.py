"""A draft a previous-version worker made (or one recorded in a run in flight at the upgrade, or
passed on by an older workflow task) carries no said_from: applied, the blob keeps its own,
rather than forgetting when the earliest of what it holds was said (h195)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memory.deps import Deps
from memory.models import ScopeKey
from memory.pipeline.consolidation import apply
from memory.pipeline.types import ConsolidationDraft
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder

KEY = ScopeKey(scope="user", agent_id="eve", user_id="alice")
SAID = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


async def test_an_older_workers_draft_keeps_the_blobs_said_from(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    try:
        await store.commit_consolidation(
            KEY, expected_version=0, content="VERSION: 1\n- green tea", word_limit=50,
            absorbed_ids=[], at=SAID, said_from=SAID,
        )  # fmt: skip
        deps = Deps(
            settings=Settings(), store=store, llm=ScriptedLLM(), embedder=WordHashEmbedder()
        )
        # As a previous-version worker's draft reads here: no said_from.
        old = ConsolidationDraft.model_validate(
            {"key": KEY.model_dump(), "base_version": 1, "word_limit": 50, "absorbed_ids": [],
             "content": "VERSION: 2\n- green tea\n- jazz"}
        )  # fmt: skip
        await apply(deps, old, datetime(2026, 11, 28, tzinfo=UTC))
        blob = await store.get_consolidated(KEY)
    finally:
        await store.close()
    assert blob is not None and blob.version == 2
    assert blob.said_from == SAID
