"""Eden → mnemos mapping on documents shaped as the seeds describe (pure: no database)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from memory.lifecycle.eden import EDEN_EMBEDDING_MODEL, map_agent
from memory.lifecycle.eden_docs import parse_agent_docs
from memory.lifecycle.plan import plan, render
from memory.lifecycle.records import BlobPart, ImportBatch, concatenate
from memory.settings import ReflectionSettings
from tests.lifecycle import eden_fixtures as fx

NOW = datetime(2026, 11, 22, tzinfo=UTC)
CFG = ReflectionSettings()


def agent_batch(agent: Any) -> ImportBatch:
    pairs = [
        (collection, doc)
        for collection, docs in fx.ALL.items()
        for doc in docs
        if doc.get("agent_id") == agent
    ]
    return map_agent(parse_agent_docs(str(agent), pairs), CFG, now=NOW)


def by_source(batch: ImportBatch) -> dict[str, str]:
    """source id → what became of it: 'fact', 'reflection', 'blob' or the drop reason."""
    out = {f.source.source_id: "fact" for f in batch.facts}
    out |= {r.source.source_id: "reflection" for r in batch.reflections}
    out |= {s.source_id: "blob" for b in batch.consolidated for s in b.sources}
    out |= {d.source.source_id: d.reason for d in batch.dropped}
    return out


def sid(n: int) -> str:
    return str(fx.oid(n))


def test_v1_agent_maps_as_the_seeds_say() -> None:
    batch = agent_batch(fx.AGENT_A)
    fate = by_source(batch)
    assert fate[sid(fx.EPISODE)].startswith("episode")
    assert fate[sid(fx.DIRECTIVE_GROUP)].startswith("directive names several users")
    assert fate[sid(fx.FACT_INACTIVE)] == "agent memory shard is inactive"
    assert fate[str(fx.SHARD_OLD)] == "agent memory shard is inactive"
    assert fate[sid(202)] == "empty content"  # Bob's empty v1 blob
    # the same text in v1 and memory2: memory2 is kept
    assert fate[sid(fx.FACT_DUP)].startswith("duplicate fact")
    assert fate[sid(fx.M2_FACT_A_DUP)] == "fact"

    alice = fx.ALICE.__str__()
    [user_blob] = [b for b in batch.consolidated if b.scope_key.scope == "user"]
    assert (user_blob.scope_key.user_id, user_blob.content) == (
        alice,
        "Alice likes concise replies.",
    )
    assert user_blob.word_limit == CFG.word_limit_user

    [agent_blob] = [b for b in batch.consolidated if b.scope_key.scope == "agent"]
    assert agent_blob.needs_merge and [p.title for p in agent_blob.parts] == ["product", "style"]
    assert (
        agent_blob.content
        == "## product\nUsers ask about pricing.\n\n## style\nUse plain language."
    )

    reflections = {r.content: r for r in batch.reflections}
    # absorbed = already in the imported blob; pending ones stay buffered for consolidation
    assert reflections["Alice wants short answers"].absorbed_into_version == 1
    assert reflections["Alice prefers metric units"].absorbed_into_version is None
    assert reflections["Alice prefers metric units"].scope_key.user_id == alice
    assert reflections["Ask before booking"].scope_key.scope == "agent"
    assert reflections["Ask before booking"].absorbed_into_version == 1
    assert reflections["Offer a summary at the end"].absorbed_into_version is None

    facts = {f.content: f for f in batch.facts}
    assert set(facts) == {"The office opens at 9am.", "Pricing starts at 10 EUR"}
    assert all(f.scope == "agent" and f.user_id is None for f in facts.values())
    assert facts["The office opens at 9am."].embedding_model == "text-embedding-3-large"
    assert facts["Pricing starts at 10 EUR"].source_session_id == str(fx.SESSION)


def test_memory2_agent_maps_scope_for_scope() -> None:
    batch = agent_batch(fx.AGENT_B)
    fate = by_source(batch)
    assert fate[sid(203)] == "superseded by memory2_consolidated for the same scope"
    assert fate[sid(fx.M2_BLOB_SESSION)].startswith("session-scoped")
    assert fate[sid(fx.M2_R_SESSION)].startswith("session-scoped")
    assert fate[sid(fx.M2_FACT_NO_USER)] == "user scope without user_id"

    facts = {f.content: f for f in batch.facts}
    peanuts = facts["Alice is allergic to peanuts"]
    assert (peanuts.scope, peanuts.user_id) == ("user", str(fx.ALICE))
    assert peanuts.embedding == fx.VECTOR and peanuts.embedding_model == EDEN_EMBEDDING_MODEL
    assert peanuts.version == 2 and peanuts.previous_content == "Alice is allergic to nuts"
    assert [h.content for h in peanuts.history] == ["Alice is allergic to nuts"]
    assert peanuts.access_count == 3
    assert facts["The agent answers in French on Fridays"].embedding is None

    reflections = {r.content: r for r in batch.reflections}
    assert reflections["Alice likes examples"].absorbed_into_version == 1
    # absorbed=False, and listed in the blob's unabsorbed_ids: buffered
    assert reflections["Alice reads on mobile"].absorbed_into_version is None
    # absorbed in Eden, but no agent blob is imported to hold it: buffered, not lost
    assert reflections["Users like tables"].absorbed_into_version is None
    [blob] = batch.consolidated
    assert blob.content.startswith("Alice likes examples") and blob.version == 1


def test_ids_are_derived_from_source_ids() -> None:
    first, again = agent_batch(fx.AGENT_B), agent_batch(fx.AGENT_B)
    assert [f.fact_id for f in first.facts] == [f.fact_id for f in again.facts]
    assert [r.reflection_id for r in first.reflections] == [
        r.reflection_id for r in again.reflections
    ]
    ids = [f.fact_id for f in first.facts + agent_batch(fx.AGENT_A).facts]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("f_") for i in ids)


def test_shards_concatenated_under_the_word_limit() -> None:
    parts = [BlobPart(title="a", content="one two three"), BlobPart(title="b", content="four five")]
    assert concatenate(parts, 100) == ("## a\none two three\n\n## b\nfour five", 0)
    text, cut = concatenate(parts, 5)  # headings count as words: "## a one two three"
    assert (text, cut) == ("## a\none two three …", 4)


def test_plan_lists_imports_and_drops_per_agent_and_user() -> None:
    p = plan([agent_batch(fx.AGENT_A), agent_batch(fx.AGENT_B)])
    lines = {(ln.agent_id, ln.user_id): ln for ln in p.lines}
    a_alice = lines[str(fx.AGENT_A), str(fx.ALICE)]
    assert (a_alice.reflections_absorbed, a_alice.reflections_buffered, a_alice.blobs) == (1, 1, 1)
    a_wide = lines[str(fx.AGENT_A), None]
    assert (a_wide.facts, a_wide.blobs_to_merge) == (2, 1)
    assert a_wide.dropped["agent memory shard is inactive"] == 2
    text = render(p, store_model=EDEN_EMBEDDING_MODEL)
    assert f"agent {fx.AGENT_A}" in text and f"  {fx.ALICE}: " in text
    assert "drop 1: episode" in text
    assert f"  {fx.ALICE}: 0 facts, 2 reflections (1 buffered), 1 blob\n" in text
    assert "1 fact with text-embedding-3-small vectors: reused" in text
    assert "1 fact with text-embedding-3-large vectors: re-embedded" in text
    n_docs = sum(len(docs) for docs in fx.ALL.values())
    # every source document is accounted for: imported (a blob may merge several) or dropped
    assert p.total_imported + p.total_dropped == n_docs - 1  # two shards → one blob


@pytest.mark.parametrize("pending_in", [2, 1], ids=["both-blobs", "one-absorbed"])
def test_a_pending_group_directive_is_dropped_not_given_to_one_user(pending_in: int) -> None:
    # Eden lists a group session's pending directive in each of its users' blobs; one of them
    # may have absorbed it already, and it is still the group's.
    group = 150
    directive = fx.session_memory(
        group, "directive", "Alice asked to keep her diagnosis private",
        related_users=[fx.ALICE, fx.BOB],
    )  # fmt: skip
    users = [{**u, "unabsorbed_memory_ids": [fx.oid(group)]} for u in fx.MEMORY_USER[:pending_in]]
    pairs = [("memory_sessions", directive), *(("memory_user", u) for u in users)]
    batch = map_agent(parse_agent_docs(str(fx.AGENT_A), pairs), CFG, now=NOW)
    assert [r.scope_key.user_id for r in batch.reflections] == []
    assert by_source(batch)[sid(group)].startswith("directive names several users")


def test_unreadable_documents_are_dropped_with_the_error() -> None:
    broken = {"_id": fx.oid(999), "agent_id": fx.AGENT_A, "content": "no type"}
    docs = parse_agent_docs(str(fx.AGENT_A), [("memory_sessions", broken)])
    [dropped] = map_agent(docs, CFG, now=NOW).dropped
    assert dropped.reason == "unreadable document" and "memory_type" in dropped.detail
