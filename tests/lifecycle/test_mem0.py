"""mem0 get_all dumps → import records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from memory.lifecycle.mem0 import load_items, map_mem0
from memory.lifecycle.plan import plan

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


def test_json_lines_of_one_memory_load() -> None:
    # One line of JSON Lines is also a whole JSON document: a memory, not a page of them.
    assert load_items(json.dumps(ITEMS[0]) + "\n") == [ITEMS[0]]


# get_all pages (or two dumps) joined while mem0 UPDATEd a memory: same id, new text and time.
LISBON = {
    "id": "8c2b1f0e-0000-4000-8000-000000000001",
    "memory": "Lives in Lisbon",
    "user_id": "alice",
    "agent_id": "chef",
    "created_at": "2025-07-20T01:30:00-07:00",
    "updated_at": "2025-07-20T01:30:00-07:00",
}
PORTO = {**LISBON, "memory": "Lives in Porto", "updated_at": "2025-08-01T10:00:00-07:00"}


@pytest.mark.parametrize("items", [[LISBON, PORTO], [PORTO, LISBON]], ids=["old-new", "new-old"])
def test_a_memory_listed_twice_keeps_its_latest_update(items: list[dict[str, Any]]) -> None:
    batch = map_mem0(items, default_agent="chef", now=NOW)
    [fact] = batch.facts
    assert (fact.content, fact.updated_at) == (
        "Lives in Porto",
        datetime(2025, 8, 1, 17, tzinfo=UTC),
    )
    [dropped] = batch.dropped
    assert dropped.reason.startswith("mem0 memory id listed more than once")
    assert "'Lives in Lisbon'" in dropped.detail
    dry_run = plan([batch])  # what --dry-run shows is what the import does
    assert (dry_run.total_imported, dry_run.total_dropped) == (1, 1)


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="'results'"):
        load_items('{"count": 3}')
