"""The set-aside step under retry: an attempt whose reply was lost wrote it; the next attempt
says so, instead of reporting the reflection kept buffered (workflows/consolidate_scope.py)."""

from __future__ import annotations

from memory.deps import Deps
from memory.ids import text_hash
from memory.llm.heuristic import HeuristicProvider
from memory.pipeline import consolidation
from memory.pipeline.types import BufferedReflection
from memory.settings import Settings
from memory.store.base import MemoryStore
from tests.fakes import WordHashEmbedder
from tests.store.builders import USER_KEY, Former, reflection

KEY = USER_KEY  # a participant of the builders' session s1


async def test_a_retried_set_aside_reports_what_the_first_attempt_did(store: MemoryStore) -> None:
    deps = Deps(
        settings=Settings(), store=store, llm=HeuristicProvider(), embedder=WordHashEmbedder()
    )
    refused, corrected = reflection(KEY, 0, "refused"), reflection(KEY, 1, "said twice")
    await (await Former(store, agent_id=USER_KEY.agent_id).start()).form(
        reflections=[refused, corrected]
    )
    first = BufferedReflection(
        reflection_id=refused.reflection_id, content_hash=text_hash("refused")
    )

    assert await consolidation.set_aside(deps, KEY, first)
    assert await consolidation.set_aside(deps, KEY, first)  # the retry
    await store.edit_reflection(corrected.reflection_id, content="said once")
    stale = BufferedReflection(
        reflection_id=corrected.reflection_id, content_hash=text_hash("said twice")
    )
    assert not await consolidation.set_aside(deps, KEY, stale)
    assert [r.content for r in await store.unabsorbed_reflections(KEY)] == ["said once"]
