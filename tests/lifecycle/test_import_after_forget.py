"""An import after a forget writes nothing of the forgotten user, whatever the file holds, on
every backend: the session memory of a session the forget took whole does not come back with a
file that lacks its messages (`mnemos export` without --messages, its default), and a fact
refused as forgotten is not embedded, nor its vector cached. Session memory without its messages
still goes into a store that no forget says otherwise of."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from memory.embedding.base import EmbeddingBatch
from memory.ids import text_hash
from memory.lifecycle.exporting import export_store
from memory.models import ScopeKey
from memory.store.base import MemoryStore
from memory.store.sqlite import SQLiteStore
from tests.lifecycle.test_import_guards import (
    AGENT,
    NOW,
    SESSION_KEY,
    StoreModelEmbedder,
    export_file,
    fact,
    import_lines,
)
from tests.store.builders import MODEL, Former, add, at, msg, record, reflection, unit

ABSORBED = reflection(SESSION_KEY, 1, "The user talked about their asthma")
BUFFERED = reflection(SESSION_KEY, 2, "The user's asthma came up again")


async def _lone_session(store: MemoryStore, *, second_agent: bool = False) -> None:
    """u1 alone in s1 with a1 (and a2 with ``second_agent``): a fact, a1's session memory (a
    blob absorbing one reflection, another buffered)."""
    await record(store, "s1", "a1", [
        msg("m1", "I was diagnosed with asthma", seconds=1),
        msg("m2", "Sorry to hear about your asthma", role="agent", seconds=2),
    ])  # fmt: skip
    if second_agent:
        await record(store, "s1", "a2", [msg("m3", "It is getting better", seconds=3)])
    await Former(store).form(add("f1", "Has asthma", unit(1)), reflections=[ABSORBED])
    await store.commit_consolidation(
        SESSION_KEY, expected_version=0, content="Asthma talk", word_limit=100,
        absorbed_ids=[ABSORBED.reflection_id], at=at(200),
    )  # fmt: skip
    await store.import_reflections([BUFFERED])


async def _export(store: MemoryStore) -> list[str]:
    """Everything but the messages: `mnemos export`'s default."""
    out = io.StringIO()
    await export_store(store, out, agent_id=None, user_id=None, messages=False, now=NOW)
    return out.getvalue().splitlines()


async def _session_memory(store: MemoryStore, key: ScopeKey = SESSION_KEY) -> tuple[object, int]:
    blob = await store.get_consolidated(key)
    return blob, len(await store.list_reflections(key, include_absorbed=True))


async def test_session_memory_without_its_messages_stays_forgotten(store: MemoryStore) -> None:
    await _lone_session(store)
    backup = await _export(store)
    await store.forget_user("u1", agent_id=None, at=at(300))

    report = await import_lines(store, backup)

    assert report.blobs[SESSION_KEY.key] == "forgotten"
    assert report.counts["reflections"].forgotten == 2
    assert report.counts["facts"].forgotten == 1
    assert await _session_memory(store) == (None, 0)


async def test_an_agents_session_memory_in_a_kept_session_stays_forgotten_without_messages(
    store: MemoryStore,
) -> None:
    """forget_user(u1, a1) keeps s1 for a2 but deletes a1's memory of it: a file without the
    messages does not bring it back either."""
    await _lone_session(store, second_agent=True)
    backup = await _export(store)
    await store.forget_user("u1", agent_id="a1", at=at(300))
    assert await store.get_session("s1") is not None

    report = await import_lines(store, backup)

    assert report.blobs[SESSION_KEY.key] == "forgotten"
    assert await _session_memory(store) == (None, 0)


async def test_session_memory_without_its_messages_goes_into_a_store_nothing_was_forgotten_of(
    store: MemoryStore, tmp_path: Path
) -> None:
    source = SQLiteStore(tmp_path / "source.db")
    await source.setup()
    try:
        await _lone_session(source)
        backup = await _export(source)
    finally:
        await source.close()

    report = await import_lines(store, backup)

    assert report.blobs[SESSION_KEY.key] == "inserted"
    assert report.counts["reflections"].inserted == 2
    blob, reflections = await _session_memory(store)
    assert blob is not None and reflections == 2


# ---------------------------------------------------------------- the embeddings cache


SECRET = "Was diagnosed with epilepsy in 2019"


async def test_a_forgotten_users_fact_is_neither_embedded_nor_cached(store: MemoryStore) -> None:
    await store.forget_user("u1", agent_id=None, at=at(0))
    embedder = StoreModelEmbedder()
    lines = export_file(
        AGENT,
        fact("f1", SECRET, embedding=None),
        fact("f2", "Likes green tea", user_id="u2", embedding=None),
    )

    report = await import_lines(store, lines, embedder)

    assert (report.counts["facts"].forgotten, report.counts["facts"].inserted) == (1, 1)
    assert [f.fact_id for f in await store.get_facts(["f1", "f2"])] == ["f2"]
    assert SECRET not in [t for call in embedder.calls for t in call]
    assert await store.get_embeddings(MODEL, [text_hash(SECRET)]) == {}


class ForgettingEmbedder(StoreModelEmbedder):
    """Embeds, then forgets u1: a forget landing between the import's embedding of a chunk and
    its write."""

    def __init__(self, store: MemoryStore) -> None:
        super().__init__()
        self.store = store

    async def embed(self, texts: Sequence[str]) -> EmbeddingBatch:
        batch = await super().embed(texts)
        await self.store.forget_user("u1", agent_id=None, at=at(0))
        return batch


async def test_a_forget_during_the_embedding_leaves_no_vector_of_the_users_text(
    store: MemoryStore,
) -> None:
    lines = export_file(AGENT, fact("f1", SECRET, embedding=None))

    report = await import_lines(store, lines, ForgettingEmbedder(store))

    assert report.counts["facts"].forgotten == 1
    assert await store.get_facts(["f1"]) == []
    assert await store.get_embeddings(MODEL, [text_hash(SECRET)]) == {}
