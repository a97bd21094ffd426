"""A draft a previous-version worker made (or one recorded in a run in flight at the upgrade, or
passed on by an older workflow task) carries no said_from. Applied, the blob keeps its own when
the draft absorbed nothing (h195); when it absorbed reflections, one of them may have been said
before it, and the blob then does not know where it begins (h196)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.deps import Deps
from memory.models import ConsolidatedMemory
from memory.pipeline.consolidation import apply
from memory.pipeline.types import ConsolidationDraft
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder
from tests.store.builders import USER_KEY, Former, reflection

KEY = USER_KEY
SAID = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


async def _applied_older_draft(tmp_path: Path, *, absorbing: bool) -> ConsolidatedMemory | None:
    """A blob said from SAID, then a previous-version worker's draft applied (as it reads here:
    no said_from), absorbing a reflection said ten days before it or nothing."""
    store = SQLiteStore(tmp_path / "m.db")
    await store.setup()
    try:
        await store.commit_consolidation(
            KEY, expected_version=0, content="VERSION: 1\n- green tea", word_limit=50,
            absorbed_ids=[], at=SAID, said_from=SAID,
        )  # fmt: skip
        paris = reflection(KEY, 1, "Alice lives in Paris").model_copy(
            update={"said_at": SAID - timedelta(days=10)}
        )
        if absorbing:
            await (await Former(store).start()).form(reflections=[paris])
        deps = Deps(
            settings=Settings(), store=store, llm=ScriptedLLM(), embedder=WordHashEmbedder()
        )
        old = ConsolidationDraft.model_validate(
            {"key": KEY.model_dump(), "base_version": 1, "word_limit": 50,
             "absorbed_ids": [paris.reflection_id] if absorbing else [],
             "content": "VERSION: 2\n- green tea\n- Alice lives in Paris"}
        )  # fmt: skip
        await apply(deps, old, datetime(2026, 11, 28, tzinfo=UTC))
        return await store.get_consolidated(KEY)
    finally:
        await store.close()


async def test_an_older_workers_draft_of_nothing_keeps_the_blobs_said_from(
    tmp_path: Path,
) -> None:
    blob = await _applied_older_draft(tmp_path, absorbing=False)
    assert blob is not None and blob.version == 2
    assert blob.said_from == SAID


async def test_an_older_workers_draft_of_reflections_leaves_said_from_unknown(
    tmp_path: Path,
) -> None:
    """It absorbed Paris, said ten days before SAID, as news: keeping SAID would make a move to
    Berlin said in between, recorded late, "earlier" than a blob that holds Paris."""
    blob = await _applied_older_draft(tmp_path, absorbing=True)
    assert blob is not None and blob.version == 2 and "Paris" in blob.content
    assert blob.said_from is None
