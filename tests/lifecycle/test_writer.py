"""The import writer with an LLM provider: Eden's agent shards are merged by the consolidation
step into one blob (the heuristic provider's concatenation is tested through the CLI)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from memory.deps import Deps
from memory.lifecycle.writer import shard_reflections, write_batch
from memory.models import ScopeKey
from memory.prompts.consolidate import ConsolidateInput
from memory.settings import Settings
from memory.store.sqlite import SQLiteStore
from tests.fakes import ScriptedLLM, WordHashEmbedder, echo_consolidation
from tests.lifecycle import eden_fixtures as fx
from tests.lifecycle.test_eden_mapping import agent_batch

NOW = datetime(2026, 11, 22, tzinfo=UTC)


async def test_agent_shards_are_merged_by_the_consolidation_step(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "mnemos.db")
    await store.setup()
    llm = ScriptedLLM(defaults={"consolidate": echo_consolidation})
    deps = Deps(settings=Settings(), store=store, llm=llm, embedder=WordHashEmbedder())
    batch = agent_batch(fx.AGENT_A)
    [shards] = [b for b in batch.consolidated if b.needs_merge]
    key = ScopeKey(scope="agent", agent_id=str(fx.AGENT_A))
    assert shards.scope_key == key

    report = await write_batch(deps, batch, now=NOW)
    again = await write_batch(deps, batch, now=NOW)

    assert report.merged == [key.key] and report.blobs[key.key] == "inserted"
    [call] = llm.calls("consolidate")
    assert isinstance(call.task_input, ConsolidateInput)
    assert [p.content in str(call.task_input.reflections) for p in shards.parts] == [True, True]
    blob = await store.get_consolidated(key)
    assert blob is not None and blob.content.startswith("VERSION: 1")
    assert "Use plain language." in blob.content and "Users ask about pricing." in blob.content
    # A second run finds the merge done: nothing merged or written again.
    assert again.blobs[key.key] == "existing" and len(llm.calls("consolidate")) == 1
    shard_ids = {r.reflection_id for r in shard_reflections(shards)}
    assert not shard_ids & {r.reflection_id for r in await store.unabsorbed_reflections(key)}
    absorbed = [await store.get_reflection(rid) for rid in shard_ids]
    assert [r.absorbed_into_version if r else None for r in absorbed] == [1, 1]
    assert await store.get_consolidated(key) == blob
    await store.close()
