"""Contract: a formation's commit drops the embedding-cache entries of texts it embedded but does
not store (every backend). They served only its own retries, and as no fact holds their text,
forget_user could never find them: the vector of a forgotten user's restated sentence stayed."""

from __future__ import annotations

from memory.ids import text_hash
from memory.store.base import MemoryStore
from tests.store.builders import MODEL, add, at, commit, msg, record, unit, vec

STORED, RESTATED = "Likes green tea", "Really likes green tea"


async def _cached(store: MemoryStore) -> set[str]:
    hashes = {text_hash(STORED): STORED, text_hash(RESTATED): RESTATED}
    return {hashes[h] for h in await store.get_embeddings(MODEL, list(hashes))}


async def test_a_commit_drops_the_vectors_of_the_texts_it_does_not_store(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("s1-1", "I really like green tea", seconds=1)])
    await store.put_embeddings(MODEL, {text_hash(t): vec(1) for t in (STORED, RESTATED)})
    formed = commit(ops=[add("f1", STORED, unit(1))]).model_copy(
        update={"embedded_text_hashes": [text_hash(STORED), text_hash(RESTATED)]}
    )

    assert (await store.commit_formation(formed)).facts_added == 1
    assert await _cached(store) == {STORED}
    # A retried commit finds it done and changes nothing.
    assert (await store.commit_formation(formed)).already_committed
    assert await _cached(store) == {STORED}


async def test_a_commit_discarded_for_an_erasure_drops_every_vector_it_cached(
    store: MemoryStore,
) -> None:
    await record(store, "s1", "a1", [msg("s1-1", "I really like green tea", seconds=1)])
    await store.put_embeddings(MODEL, {text_hash(t): vec(1) for t in (STORED, RESTATED)})
    formed = commit(ops=[add("f1", STORED, unit(1))]).model_copy(
        update={
            "embedded_text_hashes": [text_hash(STORED), text_hash(RESTATED)],
            "user_epochs": {"u1": 0},
        }
    )

    await store.forget_user("u1", agent_id="a1", at=at(50))
    result = await store.commit_formation(formed)

    assert result.discarded_for_erasure
    assert await store.get_facts(["f1"]) == []
    assert await _cached(store) == set()


async def test_the_text_of_an_add_found_already_stored_stays_cached(store: MemoryStore) -> None:
    """Its commit wrote nothing for it, but a retry of that commit reads its vector again
    before it learns the commit is done."""
    await record(store, "s1", "a1", [msg("s1-1", "I like green tea", seconds=1)])
    await record(store, "s2", "a1", [msg("s2-1", "I like green tea", seconds=2)])
    await store.put_embeddings(MODEL, {text_hash(STORED): vec(1)})
    first = commit(ops=[add("f1", STORED, unit(1))])
    again = commit(session_id="s2", ops=[add("f2", STORED, unit(1))]).model_copy(
        update={"embedded_text_hashes": [text_hash(STORED)]}
    )

    await store.commit_formation(first)
    result = await store.commit_formation(again)

    assert (result.facts_added, result.facts_duplicate) == (0, 1)
    assert await _cached(store) == {STORED}
