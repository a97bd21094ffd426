"""mem0 get_all dumps → import records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory.lifecycle.mem0 import load_items, map_mem0

NOW = datetime(2026, 11, 22, tzinfo=UTC)

# As mem0's Memory.get_all returns them (OSS ≥ 1.0): promoted ids at the top, metadata apart.
ITEMS: list[dict[str, Any]] = [
    {
        "id": "8c2b1f0e-1a2b-4c3d-9e8f-000000000001",
        "memory": "Is a vegetarian",
        "hash": "2b9bd3c0ce8a9e9ed9b8a9c5e3e3e0a1",
        "metadata": {"category": "food"},
        "created_at": "2025-07-20T01:30:00.123456-07:00",
        "updated_at": None,
        "user_id": "alice",
        "agent_id": "chef",
    },
    {
        "id": "8c2b1f0e-1a2b-4c3d-9e8f-000000000002",
        "memory": "Allergic to nuts",
        "hash": "h2",
        "metadata": None,
        "created_at": "2025-07-21T10:00:00Z",
        "updated_at": "2025-07-22T10:00:00Z",
        "user_id": "alice",
        "run_id": "trip-planning",
    },
    {
        "id": "8c2b1f0e-1a2b-4c3d-9e8f-000000000003",
        "memory": "Recommends seasonal menus",
        "hash": "h3",
        "created_at": "2025-07-21T10:00:00+00:00",
        "agent_id": "chef",
    },
    {"id": "4", "memory": "Current task is the menu", "created_at": None, "run_id": "r1"},
    {"id": "5", "memory": "Uses email", "user_id": "bob@example.com", "agent_id": "chef"},
    {"id": "6", "memory": "is a vegetarian.", "user_id": "alice", "agent_id": "chef"},
    {"id": "7", "memory": "Old promo", "agent_id": "chef", "expiration_date": "2025-01-01"},
    {"id": "8", "hash": "no text at all"},
]


def test_items_map_to_scoped_facts() -> None:
    batch = map_mem0(ITEMS, default_agent="chef", now=NOW)
    facts = {f.content: f for f in batch.facts}
    assert set(facts) == {"Is a vegetarian", "Allergic to nuts", "Recommends seasonal menus"}
    veg = facts["Is a vegetarian"]
    assert (veg.agent_id, veg.user_id, veg.scope) == ("chef", "alice", "user")
    assert veg.formed_at == datetime(2025, 7, 20, 8, 30, 0, 123456, tzinfo=UTC)
    assert veg.embedding is None  # get_all has no vectors: the store embeds
    nuts = facts["Allergic to nuts"]  # no agent_id: the default agent's user fact
    assert (nuts.agent_id, nuts.source_session_id) == ("chef", "trip-planning")
    assert nuts.updated_at == datetime(2025, 7, 22, 10, tzinfo=UTC)
    assert facts["Recommends seasonal menus"].scope == "agent"

    reasons = {d.source.source_id: d.reason for d in batch.dropped}
    assert reasons["4"].startswith("run-scoped only")
    assert reasons["5"] == "id is not a valid mnemos id"
    assert reasons["6"].startswith("duplicate fact")
    assert reasons["7"].startswith("expired")
    assert reasons["8"] == "unreadable item"
    assert len(batch.facts) + len(batch.dropped) == len(ITEMS)
    assert [a.agent_id for a in batch.agents] == ["chef"]


def test_without_a_default_agent_user_only_memories_are_dropped_with_the_reason() -> None:
    batch = map_mem0(ITEMS[:2], now=NOW)
    [dropped] = batch.dropped
    assert dropped.reason.startswith("no agent_id") and dropped.user_id == "alice"


def test_ids_are_stable_across_runs() -> None:
    first = map_mem0(ITEMS, default_agent="chef", now=NOW)
    again = map_mem0(list(reversed(ITEMS)), default_agent="chef", now=NOW)
    assert {f.fact_id for f in first.facts} == {f.fact_id for f in again.facts}


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"results": ITEMS}),
        json.dumps(ITEMS),
        json.dumps({"memories": ITEMS}),
        "\n".join(json.dumps(i) for i in ITEMS),
    ],
    ids=["results", "list", "memories", "jsonl"],
)
def test_every_get_all_shape_loads(text: str) -> None:
    assert load_items(text) == ITEMS


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="'results'"):
        load_items('{"count": 3}')
